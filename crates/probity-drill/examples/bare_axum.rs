//! The baseline for `scripts/bench-http.sh`: an axum server whose handlers return static
//! answers, so `/readyz` can be compared with the cheapest answer axum can give.
//!
//! `GET /readyz` answers `ok`. With a directory as the second argument, every file in it is
//! also served, unchanged and with the content type its extension names (`.json`,
//! `.health.json`, otherwise text), at `/static/{file name}`: the same bytes a probe answer
//! carries, without computing them, which tells the cost of probity's work apart from the
//! cost of moving a larger body.
//!
//! `cargo run --release -p probity-drill --example bare_axum -- 127.0.0.1:8099 [DIR]`

use axum::Router;
use axum::http::header::CONTENT_TYPE;
use axum::routing::get;

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let address = args.next().unwrap_or_else(|| "127.0.0.1:8099".to_owned());
    let mut app = Router::new().route("/readyz", get(|| async { "ok\n" }));
    if let Some(directory) = args.next() {
        for file in std::fs::read_dir(&directory)? {
            let path = file?.path();
            let name = path
                .file_name()
                .and_then(|name| name.to_str())
                .unwrap_or_default()
                .to_owned();
            let body: &'static str = std::fs::read_to_string(&path)?.leak();
            let content_type = if name.ends_with(".health.json") {
                "application/health+json"
            } else if name.ends_with(".json") {
                "application/json"
            } else {
                "text/plain; charset=utf-8"
            };
            app = app.route(
                &format!("/static/{name}"),
                get(move || async move { ([(CONTENT_TYPE, content_type)], body) }),
            );
        }
    }
    let listener = tokio::net::TcpListener::bind(&address).await?;
    eprintln!("bare axum on {address}");
    axum::serve(listener, app).await
}
