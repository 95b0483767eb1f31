//! The rules of a drill file that span keys: what a placeholder, a fault or a hook names
//! exists; numbers are in range.

use super::read::find_line;
use super::{
    BalancerMode, Dependency, DrillFile, FaultKind, FileError, MAX_FAULTS, MAX_INSTANCES,
    MAX_SETUP, Request, Scope, placeholder,
};
use std::path::Path;
use std::time::Duration;

impl DrillFile {
    /// Rules that span keys: what a placeholder, a fault or a hook names exists; numbers are in
    /// range.
    pub(super) fn check(&self, text: &str, file: &Path) -> Result<(), FileError> {
        let invalid = |needle: &str, message: String| FileError::Invalid {
            file: file.to_owned(),
            line: find_line(text, needle),
            message,
        };
        if self.service.is_empty()
            || !self
                .service
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err(invalid(
                "service",
                "service: a name of letters, digits, `-` and `_`".into(),
            ));
        }
        if !(1..=MAX_INSTANCES).contains(&self.instances) {
            return Err(invalid(
                "instances",
                format!("instances: from 1 to {MAX_INSTANCES}"),
            ));
        }
        if self.setup.len() > MAX_SETUP {
            return Err(invalid(
                "setup",
                format!("setup: at most {MAX_SETUP} commands"),
            ));
        }
        for (index, command) in self.setup.iter().enumerate() {
            if command.first().is_none_or(String::is_empty) {
                return Err(invalid(
                    "setup",
                    format!("setup[{index}]: a program and its arguments, e.g. [createdb, orders]"),
                ));
            }
        }
        if self.app.command.is_empty() || self.app.command[0].is_empty() {
            return Err(invalid(
                "command",
                "app.command: the program and its arguments, e.g. [node, server.js]".into(),
            ));
        }
        if self.app.port == 0 {
            return Err(invalid(
                "port",
                "app.port: a container port, 1 to 65535".into(),
            ));
        }
        for (name, port) in &self.app.ports {
            if *port == 0 || *port == self.app.port {
                return Err(invalid(
                    name,
                    format!("app.ports.{name}: a container port other than app.port"),
                ));
            }
        }
        match (&self.pod, &self.manifest) {
            (Some(_), Some(_)) => {
                return Err(invalid(
                    "manifest",
                    "pod and manifest: give the pod or point at a manifest, not both".into(),
                ));
            }
            (Some(pod), None) => pod
                .check()
                .map_err(|message| invalid("pod", format!("pod: {message}")))?,
            _ => {}
        }
        for (name, dependency) in &self.dependencies {
            let line_key = name.as_str();
            match (&dependency.url, &dependency.address) {
                (Some(_), Some(_)) | (None, None) => {
                    return Err(invalid(
                        line_key,
                        format!("dependencies.{name}: exactly one of url or address"),
                    ));
                }
                _ => {}
            }
            if dependency.target().is_none() {
                return Err(invalid(
                    line_key,
                    format!(
                        "dependencies.{name}: cannot read a host and port (a URL such as \
                         postgres://user@127.0.0.1:5432/db, or an address such as 127.0.0.1:6379)"
                    ),
                ));
            }
        }
        if self.traffic.requests.is_empty() {
            return Err(invalid(
                "requests",
                "traffic.requests: at least one request".into(),
            ));
        }
        for (index, request) in self.traffic.requests.iter().enumerate() {
            if reqwest::Method::from_bytes(request.method.as_bytes()).is_err() {
                return Err(invalid(
                    "method",
                    format!(
                        "traffic.requests[{index}].method: `{}` is not an HTTP method",
                        request.method
                    ),
                ));
            }
            if !request.path.starts_with('/') && !request.path.starts_with("{captured.") {
                return Err(invalid(
                    "path",
                    format!(
                        "traffic.requests[{index}].path: `{}` must start with /",
                        request.path
                    ),
                ));
            }
            if request.share == 0 {
                return Err(invalid(
                    "share",
                    format!("traffic.requests[{index}].share: at least 1"),
                ));
            }
            for (header, value) in &request.headers {
                if reqwest::header::HeaderName::from_bytes(header.as_bytes()).is_err()
                    || reqwest::header::HeaderValue::from_str(value).is_err()
                {
                    return Err(invalid(
                        header,
                        format!(
                            "traffic.requests[{index}].headers: `{header}` is not a valid header"
                        ),
                    ));
                }
            }
        }
        if let Some(concurrency) = self.traffic.concurrency
            && !(1..=1024).contains(&concurrency)
        {
            return Err(invalid(
                "concurrency",
                "traffic.concurrency: from 1 to 1024".into(),
            ));
        }
        if self.traffic.rate == Some(0) {
            return Err(invalid("rate", "traffic.rate: at least 1".into()));
        }
        if self.balancer.mode == BalancerMode::Kubernetes && self.balancer.check.is_some() {
            return Err(invalid(
                "check",
                "balancer.check: HAProxy's checks apply to mode haproxy only".into(),
            ));
        }
        const RETRY_ON: [&str; 14] = [
            "none",
            "conn-failure",
            "empty-response",
            "junk-response",
            "response-timeout",
            "0rtt-rejected",
            "404",
            "408",
            "425",
            "500",
            "501",
            "502",
            "503",
            "504",
        ];
        for keyword in self.balancer.retry_on.iter().flatten() {
            if !RETRY_ON.contains(&keyword.as_str()) {
                return Err(invalid(
                    "retry_on",
                    format!(
                        "balancer.retry_on: `{keyword}` is not one of {}",
                        RETRY_ON.join(", ")
                    ),
                ));
            }
        }
        let mut names = std::collections::BTreeSet::new();
        for (index, request) in self.traffic.requests.iter().enumerate() {
            if !names.insert(request.display_name()) {
                return Err(invalid(
                    "name",
                    format!(
                        "traffic.requests[{index}]: `{}` names two requests; give each a name",
                        request.display_name()
                    ),
                ));
            }
            let headers = request
                .capture
                .iter()
                .chain(request.marker.as_ref().map(|marker| &marker.header));
            for header in headers {
                if reqwest::header::HeaderName::from_bytes(header.as_bytes()).is_err() {
                    return Err(invalid(
                        header,
                        format!("traffic.requests[{index}]: `{header}` is not a header name"),
                    ));
                }
            }
        }
        if let Some(delivery) = &self.delivery {
            match self.dependencies.get(&delivery.dependency) {
                Some(Dependency { url: Some(url), .. })
                    if url.starts_with("amqp://") || url.starts_with("amqps://") => {}
                _ => {
                    return Err(invalid(
                        "delivery",
                        format!(
                            "delivery.dependency: `{}` must be one of dependencies, with an \
                             amqp:// URL",
                            delivery.dependency
                        ),
                    ));
                }
            }
            if self.traffic.class_of(&delivery.writes).is_none() {
                return Err(invalid(
                    "writes",
                    format!(
                        "delivery.writes: `{}` is not the name of a traffic request",
                        delivery.writes
                    ),
                ));
            }
        }
        for (name, hook) in &self.hooks {
            if let Some(port) = &hook.port
                && !self.app.ports.contains_key(port)
            {
                return Err(invalid(
                    name,
                    format!("hooks.{name}.port: `{port}` is not one of app.ports"),
                ));
            }
            for call in std::iter::once(&hook.start).chain(hook.stop.as_ref()) {
                if !call.path.starts_with('/')
                    || reqwest::Method::from_bytes(call.method.as_bytes()).is_err()
                {
                    return Err(invalid(
                        name,
                        format!(
                            "hooks.{name}: a call needs an HTTP method and a path starting with /"
                        ),
                    ));
                }
            }
        }
        if let Some(faults) = &self.faults {
            if faults.len() > MAX_FAULTS {
                return Err(invalid("faults", format!("faults: at most {MAX_FAULTS}")));
            }
            for (index, fault) in faults.iter().enumerate() {
                let at = |message: String| invalid("kind", format!("faults[{index}]: {message}"));
                let kind = fault.kind.name();
                match (&fault.dependency, fault.kind.needs_dependency()) {
                    (None, true) => {
                        return Err(at(format!("{kind} needs a dependency")));
                    }
                    (Some(dependency), true) if !self.dependencies.contains_key(dependency) => {
                        return Err(at(format!(
                            "dependency `{dependency}` is not one of dependencies"
                        )));
                    }
                    (Some(_), false) => {
                        return Err(at(format!("{kind} takes no dependency")));
                    }
                    _ => {}
                }
                match (&fault.hook, fault.kind) {
                    (None, FaultKind::Hook) => return Err(at("hook needs a hook name".into())),
                    (Some(hook), FaultKind::Hook) if !self.hooks.contains_key(hook) => {
                        return Err(at(format!("hook `{hook}` is not one of hooks")));
                    }
                    (Some(_), kind) if kind != FaultKind::Hook => {
                        return Err(at(format!("{} takes no hook", kind.name())));
                    }
                    _ => {}
                }
                if fault.latency.is_some() && fault.kind != FaultKind::Slow {
                    return Err(at("latency applies to slow only".into()));
                }
                if (fault.up.is_some() || fault.down.is_some()) && fault.kind != FaultKind::Flap {
                    return Err(at("up and down apply to flap only".into()));
                }
                if fault.scope == Scope::One
                    && !fault.kind.needs_dependency()
                    && fault.kind != FaultKind::Busy
                {
                    return Err(at(format!(
                        "{kind} acts on one instance already; scope applies to dependency faults \
                         and busy"
                    )));
                }
                if fault.cost.is_some() && fault.kind != FaultKind::Busy {
                    return Err(at("cost applies to busy only".into()));
                }
                if fault.cost.is_some() && fault.scope == Scope::One {
                    return Err(at(
                        "cost compares whole fleets under the same traffic: not with scope one \
                         (a busy fault of its own)"
                            .into(),
                    ));
                }
                if fault.targets.check_cost.is_some() && fault.cost.is_none() {
                    return Err(at("targets.check_cost needs cost".into()));
                }
                if fault.app.is_some()
                    && !matches!(
                        fault.kind,
                        FaultKind::Terminate
                            | FaultKind::Crash
                            | FaultKind::Wedge
                            | FaultKind::Hook
                            | FaultKind::StartDuringOutage
                    )
                {
                    return Err(at(format!(
                        "app applies to the processes a fault starts (terminate, crash, wedge, \
                         hook, start-during-outage), not to {kind}"
                    )));
                }
                for class in fault.targets.served.keys() {
                    if self.traffic.class_of(class).is_none() {
                        return Err(at(format!(
                            "targets.served: `{class}` is not the name of a traffic request ({})",
                            self.traffic
                                .requests
                                .iter()
                                .map(Request::display_name)
                                .collect::<Vec<_>>()
                                .join(", ")
                        )));
                    }
                }
                if fault.targets.unmarked_within.is_some()
                    && self.traffic.requests.iter().all(|r| r.marker.is_none())
                {
                    return Err(at(
                        "targets.unmarked_within needs a traffic request with a marker".into(),
                    ));
                }
                if fault.targets.measures_delivery() && self.delivery.is_none() {
                    return Err(at(
                        "targets.lost_writes and duplicated_writes need a delivery section".into(),
                    ));
                }
                if fault.duration() == Duration::ZERO
                    && fault.kind != FaultKind::Terminate
                    && fault.kind != FaultKind::Crash
                {
                    return Err(at("duration: longer than 0".into()));
                }
            }
        }
        // Every placeholder names something that exists.
        let known = placeholder::Known {
            ports: self.app.ports.keys().cloned().collect(),
            dependencies: self
                .dependencies
                .iter()
                .map(|(name, dep)| (name.clone(), dep.url.is_some()))
                .collect(),
            agent: self.agent.is_some(),
            captures: Default::default(),
        };
        let changes = self
            .faults
            .iter()
            .flatten()
            .flat_map(|fault| {
                fault
                    .app
                    .iter()
                    .chain(fault.cost.as_ref().map(|cost| &cost.bare))
            })
            .flat_map(|change| {
                change
                    .env
                    .iter()
                    .map(|(key, value)| (key.as_str(), value.as_str()))
                    .chain(change.args.iter().map(|arg| ("args", arg.as_str())))
            });
        let texts = self
            .app
            .command
            .iter()
            .map(|arg| ("command", arg.as_str()))
            .chain(
                self.app
                    .env
                    .iter()
                    .map(|(key, value)| (key.as_str(), value.as_str())),
            )
            .chain(self.hooks.iter().flat_map(|(name, hook)| {
                std::iter::once(&hook.start)
                    .chain(hook.stop.as_ref())
                    .map(move |call| (name.as_str(), call.path.as_str()))
            }))
            .chain(changes)
            .chain(self.delivery.iter().map(|d| ("queue", d.queue.as_str())));
        for (key, value) in texts {
            placeholder::check(value, &known)
                .map_err(|message| invalid(key, format!("{key}: {message}")))?;
        }
        // A traffic path may use what another request captured, and nothing else.
        let captures = placeholder::Known {
            captures: self
                .traffic
                .requests
                .iter()
                .filter(|request| request.capture.is_some())
                .map(Request::display_name)
                .collect(),
            ..Default::default()
        };
        for request in &self.traffic.requests {
            for placeholder in placeholder::names(&request.path) {
                if !placeholder.starts_with("captured.") {
                    return Err(invalid(
                        "path",
                        format!(
                            "traffic.requests: `{{{placeholder}}}` in `{}`: a traffic path takes \
                             only {{captured.NAME}}",
                            request.path
                        ),
                    ));
                }
            }
            placeholder::check(&request.path, &captures)
                .map_err(|message| invalid("path", format!("traffic.requests: {message}")))?;
        }
        Ok(())
    }
}
