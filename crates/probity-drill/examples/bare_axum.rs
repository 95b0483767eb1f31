//! The baseline for `scripts/bench-http.sh`: an axum server whose only handler returns a
//! static 200, so `/readyz` can be compared with the cheapest answer axum can give.
//!
//! `cargo run --release -p probity-drill --example bare_axum -- 127.0.0.1:8099`

use axum::Router;
use axum::routing::get;

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let address = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:8099".to_owned());
    let app = Router::new().route("/readyz", get(|| async { "ok\n" }));
    let listener = tokio::net::TcpListener::bind(&address).await?;
    eprintln!("bare axum on {address}");
    axum::serve(listener, app).await
}
