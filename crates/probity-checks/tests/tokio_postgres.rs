//! tokio-postgres client and connection checks against the real PostgreSQL.

#![cfg(feature = "tokio-postgres")]

#[macro_use]
mod support;

use probity::Check;
use probity_checks::postgres::{ClientCheck, ConnectionCheck, target_of};
use std::sync::Arc;
use std::time::Duration;
use support::{assert_no_secret, failure, poll, success};
use tokio_postgres::{Config, NoTls};

const ADDRESS: &str = "127.0.0.1:5432";
const TIMEOUT: Duration = Duration::from_secs(2);

fn config(port: u16, application: &str) -> Config {
    let mut config = Config::new();
    config
        .host("127.0.0.1")
        .port(port)
        .user("postgres")
        .dbname("test")
        .application_name(application);
    config
}

async fn admin() -> tokio_postgres::Client {
    let (client, connection) = config(5432, "probity-admin")
        .connect(NoTls)
        .await
        .expect("connect");
    tokio::spawn(connection);
    client
}

/// Terminates every backend whose application_name is `application`; returns how many.
async fn terminate(application: &str) -> i64 {
    let admin = admin().await;
    let row = admin
        .query_one(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1",
            &[&application],
        )
        .await
        .expect("terminate");
    row.get(0)
}

#[tokio::test]
async fn connection_check_passes_and_reconnects_after_pg_terminate_backend() {
    require!("postgres", ADDRESS);
    let application = format!("probity-conn-{}", std::process::id());
    let check = ConnectionCheck::new(config(5432, &application));
    assert_eq!(check.dependency(), Some("postgres"));
    success(poll(&check, TIMEOUT).await);
    assert_eq!(terminate(&application).await, 1);
    // The kept connection is dead; the check proves the server answers through a new one.
    success(poll(&check, TIMEOUT).await);
    success(poll(&check, TIMEOUT).await);
    assert_eq!(
        terminate(&application).await,
        1,
        "exactly one connection kept"
    );
}

#[tokio::test]
async fn client_check_fails_once_the_applications_connection_is_terminated() {
    require!("postgres", ADDRESS);
    let application = format!("probity-client-{}", std::process::id());
    let config = config(5432, &application);
    let (client, connection) = config.connect(NoTls).await.expect("connect");
    tokio::spawn(connection);
    let check = ClientCheck::new(Arc::new(client)).target(target_of(&config));
    success(poll(&check, TIMEOUT).await);
    assert_eq!(terminate(&application).await, 1);
    let error = failure(support::until_err(&check, TIMEOUT, Duration::from_secs(5)).await);
    let message = error.message();
    assert!(
        message == "connection closed (127.0.0.1:5432)"
            || message
                .starts_with("database error [57P01] (127.0.0.1:5432): terminating connection"),
        "{message}"
    );
}

#[tokio::test]
async fn closed_port_is_refused_by_address() {
    let port = support::closed_port().await;
    let error = failure(poll(&ConnectionCheck::new(config(port, "probity")), TIMEOUT).await);
    assert_eq!(
        error.message(),
        format!("connection refused (127.0.0.1:{port})")
    );
}

#[tokio::test]
async fn server_that_never_answers_times_out() {
    let address = support::silent_listener().await;
    let check = ConnectionCheck::new(config(address.port(), "probity"));
    let error = failure(poll(&check, Duration::from_millis(500)).await);
    assert_eq!(error.message(), "timed out after 500ms");
}

#[tokio::test]
async fn server_errors_are_named_and_passwords_never_show() {
    require!("postgres", ADDRESS);
    let config: Config =
        "postgresql://postgres:hunter2-s3cret@127.0.0.1:5432/probity_no_such_database"
            .parse()
            .expect("url");
    let error = failure(poll(&ConnectionCheck::new(config), TIMEOUT).await);
    assert_eq!(
        error.message(),
        "database error [3D000] (127.0.0.1:5432): database \"probity_no_such_database\" does not exist"
    );
    assert_no_secret(&error, &["hunter2-s3cret"]);
}
