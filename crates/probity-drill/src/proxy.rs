//! A TCP proxy the drill owns, in front of the shared database, that can cut it off.
//!
//! Cutting closes the listening socket (new connections are refused, as from a database host
//! that went away) and drops every open connection (clients see a reset or EOF mid-query).
//! Restoring listens again on the same address, so clients reconnect without any change.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::{AbortHandle, JoinHandle};

/// A proxy from `listen` to `upstream` that can be cut and restored.
#[derive(Debug)]
pub struct FaultProxy {
    listen: SocketAddr,
    upstream: SocketAddr,
    accept: Option<JoinHandle<()>>,
    connections: Arc<Mutex<Vec<AbortHandle>>>,
}

impl FaultProxy {
    /// Starts proxying from a free loopback port to `upstream`.
    pub async fn start(upstream: SocketAddr) -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let listen = listener.local_addr()?;
        let mut proxy = FaultProxy {
            listen,
            upstream,
            accept: None,
            connections: Arc::default(),
        };
        proxy.serve(listener);
        Ok(proxy)
    }

    /// The address clients connect to.
    pub fn listen_addr(&self) -> SocketAddr {
        self.listen
    }

    /// Whether the proxy is currently passing traffic.
    pub fn is_up(&self) -> bool {
        self.accept.is_some()
    }

    fn serve(&mut self, listener: TcpListener) {
        let upstream = self.upstream;
        let connections = self.connections.clone();
        self.accept = Some(tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let pipe = tokio::spawn(async move {
                    let Ok(mut server) = TcpStream::connect(upstream).await else {
                        return;
                    };
                    let mut client = client;
                    let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                });
                let mut open = connections.lock().unwrap_or_else(|e| e.into_inner());
                open.retain(|handle| !handle.is_finished());
                open.push(pipe.abort_handle());
            }
        }));
    }

    /// Cuts the database off: refuses new connections and drops the open ones.
    pub fn cut(&mut self) {
        if let Some(accept) = self.accept.take() {
            accept.abort();
        }
        let open = std::mem::take(&mut *self.connections.lock().unwrap_or_else(|e| e.into_inner()));
        for handle in open {
            handle.abort();
        }
    }

    /// Restores the database: listens again on the same address.
    pub async fn restore(&mut self) -> std::io::Result<()> {
        if self.accept.is_some() {
            return Ok(());
        }
        // The aborted accept task may take a moment to drop its socket; retry briefly.
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(5);
        loop {
            match TcpListener::bind(self.listen).await {
                Ok(listener) => {
                    self.serve(listener);
                    return Ok(());
                }
                Err(error) if tokio::time::Instant::now() < deadline => {
                    let _ = error;
                    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                }
                Err(error) => return Err(error),
            }
        }
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.cut();
    }
}

/// Rewrites the host and port of a `postgres://` URL to `address`, keeping user, password,
/// database and parameters.
pub fn redirect_url(url: &str, address: SocketAddr) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let userinfo = authority
        .rfind('@')
        .map(|at| &authority[..=at])
        .unwrap_or("");
    Some(format!("{scheme}://{userinfo}{address}{tail}"))
}

/// The host and port a `postgres://` or `amqp://` URL points at (the scheme's port when
/// absent: 5432, 5672, 5671 for `amqps`).
pub fn url_target(url: &str) -> Option<(String, u16)> {
    let (scheme, rest) = url.split_once("://")?;
    let default_port = match scheme {
        "amqp" => 5672,
        "amqps" => 5671,
        _ => 5432,
    };
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let authority = &rest[..authority_end];
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, hp)| hp);
    if host_port.is_empty() {
        return None;
    }
    match host_port.rsplit_once(':') {
        Some((host, port)) if !host.ends_with(']') || host.starts_with('[') => {
            Some((host.trim_matches(['[', ']']).to_owned(), port.parse().ok()?))
        }
        _ => Some((host_port.trim_matches(['[', ']']).to_owned(), default_port)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rewrites_database_urls() {
        let address: SocketAddr = "127.0.0.1:40001".parse().unwrap();
        assert_eq!(
            redirect_url(
                "postgres://app:pw@db.internal:5432/orders?sslmode=disable",
                address
            )
            .as_deref(),
            Some("postgres://app:pw@127.0.0.1:40001/orders?sslmode=disable")
        );
        assert_eq!(
            redirect_url("postgres://localhost/test", address).as_deref(),
            Some("postgres://127.0.0.1:40001/test")
        );
        assert_eq!(redirect_url("not a url", address), None);
    }

    #[test]
    fn reads_url_targets() {
        assert_eq!(
            url_target("postgres://u:p@127.0.0.1:5433/test"),
            Some(("127.0.0.1".into(), 5433))
        );
        assert_eq!(
            url_target("postgres://localhost/test"),
            Some(("localhost".into(), 5432))
        );
        assert_eq!(url_target("postgres:///test"), None);
        assert_eq!(url_target("postgres://h:notaport/x"), None);
    }

    #[tokio::test]
    async fn cut_refuses_and_drops_then_restore_reconnects() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let upstream = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let upstream_addr = upstream.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = upstream.accept().await {
                tokio::spawn(async move {
                    let mut buffer = [0u8; 64];
                    while let Ok(n) = socket.read(&mut buffer).await {
                        if n == 0 || socket.write_all(&buffer[..n]).await.is_err() {
                            break;
                        }
                    }
                });
            }
        });
        let mut proxy = FaultProxy::start(upstream_addr).await.unwrap();
        let mut client = TcpStream::connect(proxy.listen_addr()).await.unwrap();
        client.write_all(b"ping").await.unwrap();
        let mut reply = [0u8; 4];
        client.read_exact(&mut reply).await.unwrap();
        assert_eq!(&reply, b"ping");

        proxy.cut();
        assert!(!proxy.is_up());
        let mut buffer = [0u8; 4];
        let read =
            tokio::time::timeout(std::time::Duration::from_secs(5), client.read(&mut buffer))
                .await
                .expect("the open connection was not dropped");
        assert!(matches!(read, Ok(0) | Err(_)));
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(5);
        while TcpStream::connect(proxy.listen_addr()).await.is_ok() {
            assert!(
                tokio::time::Instant::now() < deadline,
                "still accepting after cut"
            );
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }

        proxy.restore().await.unwrap();
        let mut client = TcpStream::connect(proxy.listen_addr()).await.unwrap();
        client.write_all(b"back").await.unwrap();
        client.read_exact(&mut reply).await.unwrap();
        assert_eq!(&reply, b"back");
    }
}
