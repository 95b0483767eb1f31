//! The drill file's traffic as the load generator sends it: one mix, each request a class of
//! its own (its name, its success statuses, its marker, what it captures), sent through the
//! balancer for the whole run, paused when a count needs every answer in, and sent to other
//! targets (one instance, the fleets the health-check cost is measured against) alike.

use crate::file::Traffic;
use crate::load::{self, Capture, Captures, LoadHandle, LoadRequest, LoadSpec, PathPart, Timeline};
use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::Duration;
use tokio::time::Instant;

/// The mix of a drill file's traffic: each request with its weight; class `i` is
/// `traffic.requests[i]`.
pub fn mix(traffic: &Traffic) -> Vec<(LoadRequest, u32)> {
    traffic
        .requests
        .iter()
        .enumerate()
        .map(|(class, request)| {
            let template = if request.path.contains("{captured.") {
                template(&request.path, |name| traffic.class_of(name))
            } else {
                Vec::new()
            };
            (
                LoadRequest {
                    method: reqwest::Method::from_bytes(request.method.as_bytes())
                        .unwrap_or(reqwest::Method::GET),
                    path: request.path.clone(),
                    body: request.body.clone(),
                    headers: request
                        .headers
                        .iter()
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect(),
                    class: class as u16,
                    template,
                    capture: request.capture.as_ref().map(|header| Capture {
                        header: header.clone(),
                        slot: class,
                    }),
                    marker: request.marker.as_ref().map(|marker| load::Marker {
                        header: marker.header.clone(),
                        value: marker.value.clone(),
                    }),
                },
                request.share,
            )
        })
        .collect()
}

/// `path` split into text and `{captured.NAME}` parts, each NAME's slot given by `slot`.
fn template(path: &str, slot: impl Fn(&str) -> Option<usize>) -> Vec<PathPart> {
    let mut parts = Vec::new();
    let mut rest = path;
    while let Some(open) = rest.find("{captured.") {
        let after = &rest[open + "{captured.".len()..];
        let Some(close) = after.find('}') else {
            break;
        };
        let Some(index) = slot(&after[..close]) else {
            break;
        };
        if open > 0 {
            parts.push(PathPart::Text(rest[..open].to_owned()));
        }
        parts.push(PathPart::Captured(index));
        rest = &after[close + 1..];
    }
    if !rest.is_empty() {
        parts.push(PathPart::Text(rest.to_owned()));
    }
    parts
}

/// The traffic through the balancer: running, or paused.
#[derive(Debug)]
pub struct Running {
    frontend: SocketAddr,
    spec: LoadSpec,
    mix: Vec<(LoadRequest, u32)>,
    timeline: Timeline,
    captures: Captures,
    until: Instant,
    handle: Mutex<Option<LoadHandle>>,
}

impl Running {
    /// Starts `mix` at `frontend` for at most `bound`.
    pub fn start(
        frontend: SocketAddr,
        spec: LoadSpec,
        mix: Vec<(LoadRequest, u32)>,
        bound: Duration,
    ) -> Running {
        let running = Running {
            frontend,
            spec,
            mix,
            timeline: Timeline::default(),
            captures: Captures::default(),
            until: Instant::now() + bound,
            handle: Mutex::new(None),
        };
        running.resume();
        running
    }

    /// What the traffic saw.
    pub fn timeline(&self) -> &Timeline {
        &self.timeline
    }

    /// The load's shape (connections, rate, timeout).
    pub fn spec(&self) -> &LoadSpec {
        &self.spec
    }

    /// The mix.
    pub fn mix(&self) -> &[(LoadRequest, u32)] {
        &self.mix
    }

    /// Stops sending and waits until every request in flight is answered and recorded.
    pub async fn pause(&self) {
        let handle = self.handle.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(handle) = handle {
            handle.drain().await;
        }
    }

    /// Sends again, after [`Running::pause`]; values captured before are kept.
    pub fn resume(&self) {
        let spec = LoadSpec {
            duration: self.until.saturating_duration_since(Instant::now()),
            ..self.spec.clone()
        };
        let handle = load::start_captured(
            self.frontend,
            &spec,
            &self.mix,
            self.timeline.clone(),
            self.captures.clone(),
        );
        let old = self
            .handle
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .replace(handle);
        if let Some(old) = old {
            old.stop();
        }
    }

    /// The same traffic sent to `target` for `duration`, into a timeline of its own.
    pub fn also_to(&self, target: SocketAddr, duration: Duration) -> LoadHandle {
        let spec = LoadSpec {
            duration,
            ..self.spec.clone()
        };
        load::start_captured(
            target,
            &spec,
            &self.mix,
            Timeline::default(),
            Captures::default(),
        )
    }

    /// Stops the traffic for good.
    pub fn stop(&self) {
        if let Some(handle) = self.handle.lock().unwrap_or_else(|e| e.into_inner()).take() {
            handle.stop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_template_splits_into_text_and_captured_slots() {
        let slot = |name: &str| (name == "write").then_some(3);
        assert_eq!(
            template("{captured.write}", slot),
            vec![PathPart::Captured(3)]
        );
        assert_eq!(
            template("/a{captured.write}/b", slot),
            vec![
                PathPart::Text("/a".into()),
                PathPart::Captured(3),
                PathPart::Text("/b".into())
            ]
        );
    }
}
