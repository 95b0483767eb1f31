//! MQTT (rumqttc): connected to the broker, as seen by the event loop the application drives.
//!
//! rumqttc has no connection-state getter: the connection lives in the `EventLoop`, which the
//! application must poll itself. So the state is recorded where it happens. The application's
//! event-loop task hands every `poll()` result to an [`MqttStatus`]; the [`MqttCheck`] reads it.
//!
//! ```no_run
//! use probity::{CheckSpec, Tier};
//! use probity_checks::mqtt::{MqttCheck, MqttStatus};
//! use rumqttc::{AsyncClient, MqttOptions};
//!
//! # async fn run() {
//! let (client, mut event_loop) = AsyncClient::new(MqttOptions::new("orders", "broker", 1883), 64);
//! let status = MqttStatus::new("broker:1883");
//! let spec = CheckSpec::new("broker", Tier::Hard, MqttCheck::new(status.clone()));
//!
//! tokio::spawn(async move {
//!     loop {
//!         let event = event_loop.poll().await;
//!         status.observe(&event);
//!         // … handle the event as the application does …
//!         if event.is_err() {
//!             tokio::time::sleep(std::time::Duration::from_secs(1)).await;
//!         }
//!     }
//! });
//! # let _ = (spec, client);
//! # }
//! ```
//!
//! The check fails until the broker's `CONNACK` accepted the session, after any connection
//! error (`not connected to broker:1883: connection refused`), after a refused `CONNACK`
//! (`broker refused the connection (broker:1883): NotAuthorized`), and optionally when nothing
//! has come from the broker for longer than [`MqttCheck::max_silence`] (a half-open connection
//! where even keep-alive `PINGRESP`s stopped).

use crate::error::{describe_io, find_io};
use probity::redact::redact;
use probity::{Check, CheckError, CheckFuture, CheckResult, Detail, Timing};
use probity_contract::duration::format_coarse;
use rumqttc::{ConnectReturnCode, ConnectionError, Event, Packet};
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::time::Instant;

/// Interval and timeout for an MQTT check: it reads memory only.
///
/// Interval 2 s, timeout 1 s.
pub const DEFAULT_TIMING: Timing = Timing {
    interval: Duration::from_secs(2),
    timeout: Duration::from_secs(1),
};

/// The broker connection as the application's event loop last saw it. Cheap to clone; every
/// clone shares the same state.
#[derive(Clone)]
pub struct MqttStatus {
    target: Arc<str>,
    state: Arc<Mutex<State>>,
}

#[derive(Debug, Clone)]
enum Connection {
    Connecting,
    Connected,
    Refused(String),
    Failed(String),
}

#[derive(Debug, Clone)]
struct State {
    connection: Connection,
    last_heard: Option<Instant>,
}

impl MqttStatus {
    /// A status for the broker at `target` (e.g. `broker:1883`, used in messages), connecting.
    pub fn new(target: impl Into<String>) -> Self {
        Self {
            target: target.into().into(),
            state: Arc::new(Mutex::new(State {
                connection: Connection::Connecting,
                last_heard: None,
            })),
        }
    }

    /// Records one result of `EventLoop::poll()`.
    pub fn observe(&self, event: &Result<Event, ConnectionError>) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        match event {
            Ok(Event::Incoming(packet)) => {
                state.last_heard = Some(Instant::now());
                match packet {
                    Packet::ConnAck(ack) if ack.code == ConnectReturnCode::Success => {
                        state.connection = Connection::Connected;
                    }
                    Packet::ConnAck(ack) => {
                        state.connection = Connection::Refused(format!("{:?}", ack.code));
                    }
                    Packet::Disconnect => {
                        state.connection = Connection::Failed("the broker disconnected".into());
                    }
                    _ => {}
                }
            }
            Ok(Event::Outgoing(_)) => {}
            Err(ConnectionError::ConnectionRefused(code)) => {
                state.connection = Connection::Refused(format!("{code:?}"));
            }
            Err(error) => {
                state.connection = Connection::Failed(describe(error, &self.target));
            }
        }
    }
}

fn describe(error: &ConnectionError, target: &str) -> String {
    if let Some(io) = find_io(error) {
        // `describe_io` names the target itself; the caller adds it again, so strip it here.
        let text = describe_io(io, target);
        return text
            .strip_suffix(&format!(" ({target})"))
            .unwrap_or(&text)
            .to_owned();
    }
    match error {
        ConnectionError::NetworkTimeout => "connect timed out".to_owned(),
        ConnectionError::FlushTimeout => "timed out sending to the broker".to_owned(),
        other => redact(&other.to_string()).into_owned(),
    }
}

impl fmt::Debug for MqttStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        f.debug_struct("MqttStatus")
            .field("target", &self.target)
            .field("connection", &state.connection)
            .finish()
    }
}

/// Fails unless the application's event loop holds an accepted session with the broker.
///
/// Measurement: `last_heard` (s), time since the last packet from the broker.
#[derive(Debug, Clone)]
pub struct MqttCheck {
    status: MqttStatus,
    max_silence: Option<Duration>,
}

impl MqttCheck {
    /// A check reading `status`.
    pub fn new(status: MqttStatus) -> Self {
        Self {
            status,
            max_silence: None,
        }
    }

    /// Also fails when no packet came from the broker for longer than `silence`. Set it above
    /// the keep-alive interval (rumqttc pings every keep-alive period when idle), e.g. 1.5× it.
    pub fn max_silence(mut self, silence: Duration) -> Self {
        self.max_silence = Some(silence);
        self
    }

    fn judge(&self) -> CheckResult {
        let state = self
            .status
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let target = &self.status.target;
        match state.connection {
            Connection::Connected => {}
            Connection::Connecting => {
                return Err(CheckError::new(format!(
                    "connecting to {target}: no CONNACK yet"
                )));
            }
            Connection::Refused(code) => {
                return Err(CheckError::new(format!(
                    "broker refused the connection ({target}): {code}"
                )));
            }
            Connection::Failed(reason) => {
                return Err(CheckError::new(format!(
                    "not connected to {target}: {reason}"
                )));
            }
        }
        let silence = state.last_heard.map(|at| at.elapsed()).unwrap_or_default();
        if let Some(limit) = self.max_silence
            && silence > limit
        {
            return Err(CheckError::new(format!(
                "nothing from {target} for {} (limit {})",
                format_coarse(silence),
                format_coarse(limit)
            ))
            .measurement("last_heard", silence.as_secs() as f64, Some("s")));
        }
        Ok(Detail::new()
            .message(format!("connected to {target}"))
            .measurement("last_heard", silence.as_secs() as f64, Some("s")))
    }
}

impl Check for MqttCheck {
    fn check(&self) -> CheckFuture<'_> {
        let result = self.judge();
        Box::pin(async move { result })
    }

    fn dependency(&self) -> Option<&str> {
        Some("mqtt")
    }

    fn default_timing(&self) -> Option<Timing> {
        Some(DEFAULT_TIMING)
    }

    fn default_fall(&self) -> Option<u32> {
        Some(crate::NETWORK_FALL)
    }
}
