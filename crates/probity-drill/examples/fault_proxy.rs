//! The drill's per-instance fault proxy on its own, for `scripts/bench-fault-proxy.sh`: an open
//! [`TcpFaultProxy`] in front of `UPSTREAM`, on a runtime like the drill's (two worker threads).
//! Prints the address it listens on, then forwards until killed.
//!
//! `cargo run --release -p probity-drill --example fault_proxy -- 127.0.0.1:8099`

use probity_drill::engine::tcp::TcpFaultProxy;
use std::io::Write as _;
use std::net::SocketAddr;

fn main() -> std::io::Result<()> {
    let upstream: SocketAddr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:8099".to_owned())
        .parse()
        .map_err(|error| std::io::Error::new(std::io::ErrorKind::InvalidInput, error))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let proxy = TcpFaultProxy::start(upstream).await?;
        let mut stdout = std::io::stdout();
        writeln!(stdout, "{}", proxy.address())?;
        stdout.flush()?;
        std::future::pending::<()>().await;
        Ok(())
    })
}
