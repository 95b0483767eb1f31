//! A dependency that goes away and comes back, watched through probity's three probes.
//!
//! The "database" is a real TCP listener this example owns; the readiness check connects to
//! it. Halfway through, the listener closes: readiness fails (the instance would be drained),
//! liveness keeps passing (nothing restarts). The listener returns: readiness recovers after
//! three good polls. Then SIGTERM-style shutdown: readiness fails at once, liveness still
//! passes, and the server may stop accepting after the drain delay.
//!
//! Run it with `cargo run -p probity --example quickstart`.

use probity::render::{Clock, Details, Format, Query, Request, render};
use probity::{CheckError, CheckSpec, Detail, Health, ProbeKind, Tier};
use std::net::SocketAddr;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};

fn probe(health: &Health, probe: ProbeKind) -> String {
    let query = Query {
        verbose: true,
        exclude: Vec::new(),
    };
    let answer = render(
        &health.snapshot(),
        &Request {
            probe,
            check: None,
            query: &query,
            format: Format::Text,
            details: Details::Admin,
        },
        Clock::now(),
    );
    let body = answer.body.trim_end().replace('\n', "\n      ");
    format!("{} {}\n      {body}", probe.default_path(), answer.status)
}

async fn serve_database(address: SocketAddr) -> std::io::Result<tokio::task::JoinHandle<()>> {
    let listener = TcpListener::bind(address).await?;
    Ok(tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            drop(socket);
        }
    }))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?;
    drop(listener);
    let mut database = serve_database(address).await?;

    let health = Health::builder()
        .service("quickstart")
        .check(
            CheckSpec::new("db", Tier::Hard, move || async move {
                TcpStream::connect(address)
                    .await
                    .map(|_| Detail::new().message(format!("connected to {address}")))
                    .map_err(|error| CheckError::new(format!("connect {address}: {error}")))
            })
            .dependency("tcp")
            .interval(Duration::from_millis(500))
            .timeout(Duration::from_millis(200)),
        )
        .startup_step("migrations")
        .runtime_watchdog(Duration::from_secs(5))
        .drain_delay(Duration::from_secs(1))
        .build()?;
    health.start()?;

    println!("booting: migrations not applied yet");
    println!("{}\n", probe(&health, ProbeKind::Readiness));
    tokio::time::sleep(Duration::from_millis(300)).await;
    health.complete_step("migrations")?;
    println!("migrations applied");
    println!("{}\n", probe(&health, ProbeKind::Readiness));

    database.abort();
    let _ = (&mut database).await;
    tokio::time::sleep(Duration::from_millis(700)).await;
    println!("the database went away: the instance drains, nothing restarts");
    println!("{}", probe(&health, ProbeKind::Readiness));
    println!("{}\n", probe(&health, ProbeKind::Liveness));

    let _database = serve_database(address).await?;
    tokio::time::sleep(Duration::from_millis(600)).await;
    println!("the database is back: one good poll is not enough (rise 3)");
    println!("{}\n", probe(&health, ProbeKind::Readiness));
    tokio::time::sleep(Duration::from_millis(1200)).await;
    println!("three good polls in a row: back in rotation");
    println!("{}\n", probe(&health, ProbeKind::Readiness));

    health.shutdown();
    println!("SIGTERM: readiness fails at once, liveness keeps passing");
    println!("{}", probe(&health, ProbeKind::Readiness));
    println!("{}", probe(&health, ProbeKind::Liveness));
    health.view().drained().await;
    println!("\ndrain delay over: the server would stop accepting now");
    Ok(())
}
