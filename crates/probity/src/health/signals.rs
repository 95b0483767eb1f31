//! SIGTERM and SIGINT: the first starts the shutdown, a second ends the process.

use super::Health;

impl Health {
    /// Starts the shutdown sequence on SIGTERM or SIGINT (Ctrl-C), and ends the process on a
    /// second one.
    ///
    /// The first signal calls [`Health::shutdown`]: readiness fails, the drain begins. A second
    /// SIGTERM or SIGINT exits the process at once with status 128 + the signal's number (143,
    /// 130), without finishing the drain — for a person at a terminal who does not want to
    /// wait, or an orchestrator that sends a second signal. On Unix the signals are counted on
    /// a thread of their own, off the tokio runtime, so both work even while the runtime is
    /// stalled (a blocking call on every worker), when nothing on it would run; no runtime is
    /// needed to call this. Elsewhere, Ctrl-C is watched from a task on the current runtime.
    ///
    /// Call it once per process: each call counts signals on its own.
    pub fn shutdown_on_signals(&self) {
        #[cfg(unix)]
        {
            use signal_hook::consts::{SIGINT, SIGTERM};
            let signals = match signal_hook::iterator::Signals::new([SIGINT, SIGTERM]) {
                Ok(signals) => signals,
                Err(error) => {
                    tracing::error!(target: "probity::shutdown", %error, "cannot listen for SIGTERM and SIGINT");
                    return;
                }
            };
            let health = self.clone();
            let spawned = std::thread::Builder::new()
                .name("probity-signals".into())
                .spawn(move || count_signals(signals, &health));
            if let Err(error) = spawned {
                tracing::error!(target: "probity::shutdown", %error, "cannot start the signal thread");
            }
        }
        #[cfg(not(unix))]
        {
            let health = self.clone();
            tokio::spawn(async move {
                if tokio::signal::ctrl_c().await.is_err() {
                    return;
                }
                tracing::info!(target: "probity::shutdown", "Ctrl-C received");
                health.shutdown();
                if tokio::signal::ctrl_c().await.is_ok() {
                    tracing::warn!(target: "probity::shutdown", "second Ctrl-C: exiting without finishing the drain");
                    std::process::exit(130);
                }
            });
        }
    }
}

/// The first signal starts the shutdown; a second ends the process.
#[cfg(unix)]
fn count_signals(mut signals: signal_hook::iterator::Signals, health: &Health) {
    let name = |signal: i32| match signal {
        signal_hook::consts::SIGINT => "SIGINT",
        _ => "SIGTERM",
    };
    let mut received = 0;
    for signal in signals.forever() {
        received += 1;
        if received == 1 {
            tracing::info!(target: "probity::shutdown", "{} received", name(signal));
            health.shutdown();
        } else {
            tracing::warn!(
                target: "probity::shutdown",
                "second signal ({}): exiting without finishing the drain",
                name(signal)
            );
            std::process::exit(128 + signal);
        }
    }
}
