//! Is the drill's fault proxy the bottleneck? An HTTP server answered at 32 connections,
//! closed loop, directly and through an open `TcpFaultProxy`, in alternating segments so both
//! see the same machine; prints each pair and the median, with the spread.
//!
//! `cargo run --release -p probity-drill --example fault_proxy_bench -- [SEGMENT_SECONDS] [PAIRS]`
//!
//! The server runs on a runtime of its own (one thread); the proxy and the load generator share
//! the main runtime, as they do in a drill.

use axum::Router;
use axum::routing::get;
use probity_drill::engine::tcp::TcpFaultProxy;
use probity_drill::load::{self, LoadRequest, LoadSpec};
use std::time::Duration;

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let segment = Duration::from_secs(args.next().and_then(|s| s.parse().ok()).unwrap_or(5));
    let pairs: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(5);

    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    listener.set_nonblocking(true)?;
    let server = listener.local_addr()?;
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("server runtime");
        runtime.block_on(async move {
            let app = Router::new().route("/", get(|| async { "ok\n" }));
            let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
            let _ = axum::serve(listener, app).await;
        });
    });

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let proxy = TcpFaultProxy::start(server).await?;
        let spec = LoadSpec {
            concurrency: 32,
            duration: segment,
            request: LoadRequest::get("/"),
            ..LoadSpec::default()
        };
        // Warm both paths.
        load::run(
            server,
            LoadSpec {
                duration: Duration::from_secs(1),
                ..spec.clone()
            },
        )
        .await;
        load::run(
            proxy.address(),
            LoadSpec {
                duration: Duration::from_secs(1),
                ..spec.clone()
            },
        )
        .await;
        let mut ratios = Vec::new();
        let mut added_p50 = Vec::new();
        let mut added_p99 = Vec::new();
        println!("pair  direct req/s  proxied req/s  ratio  direct p50/p99 ms  proxied p50/p99 ms");
        for pair in 0..pairs {
            // Alternate which goes first, so a drift in the machine's load favours neither.
            let (direct, proxied) = if pair % 2 == 0 {
                let direct = load::run(server, spec.clone()).await;
                (direct, load::run(proxy.address(), spec.clone()).await)
            } else {
                let proxied = load::run(proxy.address(), spec.clone()).await;
                (load::run(server, spec.clone()).await, proxied)
            };
            let ratio = proxied.requests_per_second / direct.requests_per_second.max(1.0);
            ratios.push(ratio);
            let ms = |d: Duration| d.as_secs_f64() * 1000.0;
            added_p50.push(ms(proxied.latency_p50) - ms(direct.latency_p50));
            added_p99.push(ms(proxied.latency_p99) - ms(direct.latency_p99));
            println!(
                "{:>4}  {:>12.0}  {:>13.0}  {:>5.2}  {:>8.2}/{:<8.2}  {:>8.2}/{:<8.2}",
                pair + 1,
                direct.requests_per_second,
                proxied.requests_per_second,
                ratio,
                ms(direct.latency_p50),
                ms(direct.latency_p99),
                ms(proxied.latency_p50),
                ms(proxied.latency_p99),
            );
            assert_eq!(direct.failed + proxied.failed, 0, "requests failed");
        }
        let median = |values: &mut Vec<f64>| {
            values.sort_by(f64::total_cmp);
            (
                values[values.len() / 2],
                values[0],
                values[values.len() - 1],
            )
        };
        let (ratio, low, high) = median(&mut ratios);
        let (p50, p50_low, p50_high) = median(&mut added_p50);
        let (p99, p99_low, p99_high) = median(&mut added_p99);
        println!(
            "\nthrough the proxy: {:.0}% of direct throughput (median of {pairs} pairs; spread \
             {:.0}–{:.0}%), p50 {p50:+.2} ms ({p50_low:+.2} to {p50_high:+.2}), p99 {p99:+.2} ms \
             ({p99_low:+.2} to {p99_high:+.2})",
            ratio * 100.0,
            low * 100.0,
            high * 100.0
        );
        Ok(())
    })
}
