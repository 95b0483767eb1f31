//! A per-instance TCP fault proxy in front of one dependency: the drill breaks the path without
//! the service's help.
//!
//! - [`PathState::Refused`]: the listener is closed (new connections are refused, as from a host
//!   that went away) and every open connection is reset (`SO_LINGER` 0, so the peer reads
//!   `ECONNRESET` mid-query rather than a clean EOF).
//! - [`PathState::BlackHoled`]: connections are accepted and nothing moves in either direction,
//!   on new and open connections alike — a partition whose packets are dropped, where a client
//!   without a timeout waits for ever. What was in flight moves again when the path opens, as
//!   TCP's retransmissions deliver it.
//! - [`PathState::Slow`]: every chunk, each way, waits the latency before it is passed on.
//!
//! A fault proxy per instance per dependency lets a fault reach every instance (the dependency
//! is down) or one (that instance's own path is cut).

use std::net::SocketAddr;
use std::os::fd::AsFd;
use std::sync::Mutex;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// The state of a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PathState {
    /// Bytes pass.
    #[default]
    Open,
    /// Refused: no listener, open connections reset.
    Refused,
    /// Accepted, nothing answered.
    BlackHoled,
    /// Every chunk waits this long.
    Slow(Duration),
}

/// The largest chunk passed on at once.
const CHUNK: usize = 16 * 1024;

/// One proxy: a loopback listener forwarding to `upstream`.
#[derive(Debug)]
pub struct TcpFaultProxy {
    listen: SocketAddr,
    upstream: SocketAddr,
    state: watch::Sender<PathState>,
    accept: Mutex<Option<JoinHandle<()>>>,
}

impl TcpFaultProxy {
    /// Starts forwarding from a free loopback port to `upstream`.
    pub async fn start(upstream: SocketAddr) -> std::io::Result<TcpFaultProxy> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let listen = listener.local_addr()?;
        let (state, _) = watch::channel(PathState::Open);
        let proxy = TcpFaultProxy {
            listen,
            upstream,
            state,
            accept: Mutex::new(None),
        };
        proxy.serve(listener);
        Ok(proxy)
    }

    /// The address the instance connects to.
    pub fn address(&self) -> SocketAddr {
        self.listen
    }

    /// The path's state now.
    pub fn state(&self) -> PathState {
        *self.state.borrow()
    }

    fn serve(&self, listener: TcpListener) {
        let upstream = self.upstream;
        let state = self.state.clone();
        let task = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let _ = client.set_nodelay(true);
                tokio::spawn(pipe(client, upstream, state.subscribe()));
            }
        });
        if let Some(old) = self
            .accept
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .replace(task)
        {
            old.abort();
        }
    }

    /// Puts the path in `state`: refusing closes the listener and resets every connection;
    /// leaving refusal listens again on the same address.
    pub async fn set(&self, state: PathState) -> std::io::Result<()> {
        let before = self.state();
        self.state.send_replace(state);
        if state == PathState::Refused && before != PathState::Refused {
            let accept = self.accept.lock().unwrap_or_else(|e| e.into_inner()).take();
            if let Some(accept) = accept {
                accept.abort();
                // The listener is dropped with the task; wait for it, so a connect after this
                // returns is refused.
                let _ = accept.await;
            }
        } else if state != PathState::Refused && before == PathState::Refused {
            // The aborted accept task may take a moment to drop its socket; retry briefly.
            let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
            loop {
                match TcpListener::bind(self.listen).await {
                    Ok(listener) => {
                        self.serve(listener);
                        break;
                    }
                    Err(error) if tokio::time::Instant::now() >= deadline => return Err(error),
                    Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
                }
            }
        }
        Ok(())
    }
}

impl Drop for TcpFaultProxy {
    fn drop(&mut self) {
        self.state.send_replace(PathState::Refused);
        if let Some(accept) = self.accept.lock().unwrap_or_else(|e| e.into_inner()).take() {
            accept.abort();
        }
    }
}

/// Closes a socket with a reset rather than a FIN.
fn reset(stream: TcpStream) {
    let _ = rustix::net::sockopt::set_socket_linger(stream.as_fd(), Some(Duration::ZERO));
    drop(stream);
}

/// Waits until the path is refused (or the proxy is gone).
async fn refused(mut state: watch::Receiver<PathState>) {
    let _ = state.wait_for(|state| *state == PathState::Refused).await;
}

/// Waits until bytes may pass; `Err` when the path is refused meanwhile. Returns the delay to
/// add before passing them on.
async fn passable(state: &mut watch::Receiver<PathState>) -> Result<Duration, ()> {
    loop {
        let now = *state.borrow_and_update();
        match now {
            PathState::Open => return Ok(Duration::ZERO),
            PathState::Slow(latency) => return Ok(latency),
            PathState::Refused => return Err(()),
            PathState::BlackHoled => {
                if state.changed().await.is_err() {
                    return Err(());
                }
            }
        }
    }
}

async fn forward(
    from: &mut OwnedReadHalf,
    to: &mut OwnedWriteHalf,
    mut state: watch::Receiver<PathState>,
) {
    let mut buffer = vec![0u8; CHUNK];
    loop {
        if passable(&mut state).await.is_err() {
            return;
        }
        let read = match from.read(&mut buffer).await {
            Ok(0) | Err(_) => {
                let _ = to.shutdown().await;
                return;
            }
            Ok(read) => read,
        };
        // Read while open, held while black-holed, delayed while slow.
        let Ok(delay) = passable(&mut state).await else {
            return;
        };
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        if to.write_all(&buffer[..read]).await.is_err() {
            return;
        }
    }
}

async fn pipe(client: TcpStream, upstream: SocketAddr, mut state: watch::Receiver<PathState>) {
    // A black-holed path accepts and says nothing: the upstream is not even reached.
    if passable(&mut state).await.is_err() {
        reset(client);
        return;
    }
    let server = tokio::select! {
        connected = TcpStream::connect(upstream) => match connected {
            Ok(server) => server,
            Err(_) => {
                reset(client);
                return;
            }
        },
        () = refused(state.clone()) => {
            reset(client);
            return;
        }
    };
    let _ = server.set_nodelay(true);
    let (mut client_read, mut client_write) = client.into_split();
    let (mut server_read, mut server_write) = server.into_split();
    let was_refused = tokio::select! {
        () = async {
            tokio::join!(
                forward(&mut client_read, &mut server_write, state.clone()),
                forward(&mut server_read, &mut client_write, state.clone()),
            );
        } => *state.borrow() == PathState::Refused,
        () = refused(state.clone()) => true,
    };
    if was_refused {
        if let Ok(client) = client_read.reunite(client_write) {
            reset(client);
        }
        if let Ok(server) = server_read.reunite(server_write) {
            reset(server);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn echo_server() -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
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
        address
    }

    async fn round_trip(stream: &mut TcpStream, text: &[u8]) -> std::io::Result<Vec<u8>> {
        stream.write_all(text).await?;
        let mut reply = vec![0u8; text.len()];
        stream.read_exact(&mut reply).await?;
        Ok(reply)
    }

    const WAIT: Duration = Duration::from_secs(10);

    #[tokio::test]
    async fn refused_resets_open_connections_and_refuses_new_ones_until_open() {
        let proxy = TcpFaultProxy::start(echo_server().await).await.unwrap();
        let mut open = TcpStream::connect(proxy.address()).await.unwrap();
        assert_eq!(round_trip(&mut open, b"ping").await.unwrap(), b"ping");

        proxy.set(PathState::Refused).await.unwrap();
        let mut buffer = [0u8; 4];
        let read = tokio::time::timeout(WAIT, open.read(&mut buffer))
            .await
            .expect("the open connection was left open");
        let error = read.expect_err("a reset, not a clean end");
        assert_eq!(error.kind(), std::io::ErrorKind::ConnectionReset);
        let refused = TcpStream::connect(proxy.address()).await.unwrap_err();
        assert_eq!(refused.kind(), std::io::ErrorKind::ConnectionRefused);

        proxy.set(PathState::Open).await.unwrap();
        let mut again = TcpStream::connect(proxy.address()).await.unwrap();
        assert_eq!(round_trip(&mut again, b"back").await.unwrap(), b"back");
    }

    #[tokio::test]
    async fn black_holed_accepts_and_answers_nothing_then_delivers_when_open() {
        let proxy = TcpFaultProxy::start(echo_server().await).await.unwrap();
        let mut open = TcpStream::connect(proxy.address()).await.unwrap();
        assert_eq!(round_trip(&mut open, b"one").await.unwrap(), b"one");

        proxy.set(PathState::BlackHoled).await.unwrap();
        let mut new = tokio::time::timeout(WAIT, TcpStream::connect(proxy.address()))
            .await
            .unwrap()
            .expect("a black hole accepts");
        for stream in [&mut open, &mut new] {
            stream.write_all(b"two").await.unwrap();
            let mut buffer = [0u8; 3];
            let waited =
                tokio::time::timeout(Duration::from_millis(300), stream.read_exact(&mut buffer))
                    .await;
            assert!(waited.is_err(), "an answer came through a black hole");
        }
        proxy.set(PathState::Open).await.unwrap();
        for stream in [&mut open, &mut new] {
            let mut buffer = [0u8; 3];
            tokio::time::timeout(WAIT, stream.read_exact(&mut buffer))
                .await
                .expect("held bytes were not delivered")
                .unwrap();
            assert_eq!(&buffer, b"two");
        }
    }

    #[tokio::test]
    async fn slow_delays_each_way() {
        let proxy = TcpFaultProxy::start(echo_server().await).await.unwrap();
        let mut stream = TcpStream::connect(proxy.address()).await.unwrap();
        proxy
            .set(PathState::Slow(Duration::from_millis(200)))
            .await
            .unwrap();
        let started = tokio::time::Instant::now();
        assert_eq!(round_trip(&mut stream, b"slow").await.unwrap(), b"slow");
        // Two chunks (there and back), each held 200 ms.
        assert!(started.elapsed() >= Duration::from_millis(400));
    }
}
