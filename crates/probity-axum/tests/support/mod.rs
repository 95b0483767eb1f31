//! An in-memory listener for serving tests on tokio's paused clock.

#![allow(dead_code, unreachable_pub)]

use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};
use tokio::sync::mpsc;

/// A listener whose connections are in-memory pipes handed over a channel.
pub struct MemoryListener {
    incoming: mpsc::UnboundedReceiver<DuplexStream>,
}

impl axum::serve::Listener for MemoryListener {
    type Io = DuplexStream;
    type Addr = &'static str;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.incoming.recv().await {
            Some(io) => (io, "memory"),
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok("memory")
    }
}

#[derive(Clone)]
pub struct Connector(pub mpsc::UnboundedSender<DuplexStream>);

impl Connector {
    /// Sends one HTTP/1.1 request on a new connection; `None` when the listener is closed.
    pub async fn get(&self, path: &str) -> Option<(u16, String)> {
        let (mut client, server) = tokio::io::duplex(64 * 1024);
        self.0.send(server).ok()?;
        let request = format!("GET {path} HTTP/1.1\r\nhost: memory\r\nconnection: close\r\n\r\n");
        client.write_all(request.as_bytes()).await.ok()?;
        let mut raw = String::new();
        client.read_to_string(&mut raw).await.ok()?;
        let status = raw.get(9..12)?.parse().ok()?;
        let body = raw.split_once("\r\n\r\n")?.1.to_owned();
        Some((status, body))
    }
}

pub fn memory_listener() -> (MemoryListener, Connector) {
    let (sender, incoming) = mpsc::unbounded_channel();
    (MemoryListener { incoming }, Connector(sender))
}

impl Connector {
    /// A new raw connection, for clients that misbehave.
    pub fn connect(&self) -> Option<DuplexStream> {
        let (client, server) = tokio::io::duplex(64 * 1024);
        self.0.send(server).ok()?;
        Some(client)
    }
}

/// Reads until the peer closes; returns what it sent (`None` on an I/O error).
pub async fn read_all(stream: &mut DuplexStream) -> Option<String> {
    let mut raw = String::new();
    stream.read_to_string(&mut raw).await.ok()?;
    Some(raw)
}

/// Writes `bytes`; `false` when the peer has gone.
pub async fn send(stream: &mut DuplexStream, bytes: &[u8]) -> bool {
    stream.write_all(bytes).await.is_ok()
}
