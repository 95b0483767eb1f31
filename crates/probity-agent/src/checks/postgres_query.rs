//! `postgres` with `query`: a query of the app's choosing on a connection of the agent's own,
//! for a database whose health is more than answering — a table the app reads that a lock
//! can block while `SELECT 1` still answers.

use probity::{Check, CheckError, CheckFuture, CheckResult, Detail, Timing};
use std::time::Duration;
use tokio::sync::Mutex;
use tokio::time::Instant;
use tokio_postgres::{Client, Config, NoTls};

/// A query run on the agent's own connection, cut by the server just before the poll's
/// timeout (`statement_timeout`), so a blocked query frees its backend and keeps the
/// connection.
pub(crate) struct PostgresQueryCheck {
    config: Config,
    target: String,
    query: String,
    client: Mutex<Option<Client>>,
}

impl PostgresQueryCheck {
    pub(crate) fn new(mut config: Config, query: String, timing: Timing) -> Self {
        let target = probity_checks::postgres::target_of(&config);
        // The server cancels the statement a little before the poll's timeout: a query blocked
        // by a lock does not leave a backend waiting after the agent gave up on it.
        let budget = (timing.timeout * 9 / 10).max(Duration::from_millis(1));
        config.options(format!(
            "-c statement_timeout={ms} -c lock_timeout={ms}",
            ms = budget.as_millis()
        ));
        Self {
            config,
            target,
            query,
            client: Mutex::new(None),
        }
    }

    async fn poll(&self) -> CheckResult {
        let started = Instant::now();
        let mut cached = self.client.lock().await;
        // Taken for the query: a poll cut at its timeout drops the connection with it, and
        // the next poll connects afresh.
        let client = match cached.take() {
            Some(client) if !client.is_closed() => client,
            _ => {
                let (client, connection) = self
                    .config
                    .connect(NoTls)
                    .await
                    .map_err(|error| self.error(&error))?;
                tokio::spawn(async move {
                    let _ = connection.await;
                });
                client
            }
        };
        match client.simple_query(&self.query).await {
            Ok(_) => {
                *cached = Some(client);
                Ok(Detail::new().measurement(
                    "response_time",
                    started.elapsed().as_secs_f64() * 1000.0,
                    Some("ms"),
                ))
            }
            Err(error) => {
                let failure = self.error(&error);
                if error.as_db_error().is_some() {
                    *cached = Some(client);
                }
                Err(failure)
            }
        }
    }

    fn error(&self, error: &tokio_postgres::Error) -> CheckError {
        let message = match error.as_db_error() {
            Some(database) => format!(
                "database error [{}] ({}): {}",
                database.code().code(),
                self.target,
                probity::redact::redact(database.message())
            ),
            None if error.is_closed() => format!("connection closed ({})", self.target),
            None => {
                let text = probity_contract::text::error_chain(error);
                format!("{} ({})", probity::redact::redact(&text), self.target)
            }
        };
        let canceled = error
            .as_db_error()
            .is_some_and(|database| matches!(database.code().code(), "57014" | "55P03"));
        let error = CheckError::new(message);
        if canceled {
            // Cut by statement_timeout or lock_timeout: no answer within the budget.
            error.kind(probity::FailureKind::Timeout)
        } else {
            error
        }
    }
}

impl Check for PostgresQueryCheck {
    fn check(&self) -> CheckFuture<'_> {
        Box::pin(self.poll())
    }

    fn dependency(&self) -> Option<&str> {
        Some("postgres")
    }

    fn default_timing(&self) -> Option<Timing> {
        Some(probity_checks::postgres::DEFAULT_TIMING)
    }

    fn default_fall(&self) -> Option<u32> {
        Some(probity_checks::NETWORK_FALL)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_connection_error_names_its_cause_once() {
        // Port 1 on the loopback: nothing listens, the connect is refused at once.
        let config: Config = "host=127.0.0.1 port=1 user=probity dbname=test connect_timeout=5"
            .parse()
            .unwrap();
        let check = PostgresQueryCheck::new(
            config,
            "SELECT 1".into(),
            Timing {
                interval: Duration::from_secs(2),
                timeout: Duration::from_secs(1),
            },
        );
        let error = check.poll().await.unwrap_err();
        let message = error.message();
        assert!(
            message.starts_with("error connecting to server: "),
            "{message}"
        );
        assert!(message.ends_with("(127.0.0.1:1)"), "{message}");
        // The cause follows tokio-postgres's own message, once.
        let cause = "Connection refused";
        assert_eq!(message.matches(cause).count(), 1, "{message}");
    }
}
