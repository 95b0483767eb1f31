//! A container's probes, read into the API's own probe type so its defaults and validation
//! are Kubernetes'.

use super::field::{Problem, Setting, field_position, read_int, whole_seconds, written_scalar};
use crate::yaml::{Entry, Node, Position, Value};
use probity_contract::kube::probe::{
    ExecAction, GrpcAction, HttpGetAction, HttpHeader, IntOrString, ProbeSpec, ProbeTiming,
    TcpSocketAction,
};
use probity_contract::probe::ProbeKind;

/// A probe port as written: a number, or (for HTTP and TCP) a port name.
#[derive(Debug, Clone)]
pub(crate) struct Port {
    pub(crate) port: IntOrString,
    pub(crate) position: Position,
}

#[derive(Debug, Clone)]
pub(crate) struct Host {
    pub(crate) name: String,
    pub(crate) position: Position,
}

/// What a probe runs.
#[derive(Debug, Clone)]
pub(crate) enum Handler {
    Http {
        path: String,
        path_position: Option<Position>,
        port: Option<Port>,
        host: Option<Host>,
        scheme: String,
    },
    Tcp {
        port: Option<Port>,
        host: Option<Host>,
    },
    Grpc {
        port: Option<Port>,
        service: String,
    },
    Exec {
        command: Vec<String>,
        /// Where the `command` key is written.
        position: Position,
    },
    Missing,
}

impl Handler {
    pub(crate) fn port(&self) -> Option<&Port> {
        match self {
            Handler::Http { port, .. } | Handler::Tcp { port, .. } | Handler::Grpc { port, .. } => {
                port.as_ref()
            }
            Handler::Exec { .. } | Handler::Missing => None,
        }
    }

    pub(crate) fn host(&self) -> Option<&Host> {
        match self {
            Handler::Http { host, .. } | Handler::Tcp { host, .. } => host.as_ref(),
            _ => None,
        }
    }
}

#[derive(Debug)]
pub(crate) struct Probe<'a> {
    /// The `livenessProbe:` (or other) entry, for fixes.
    pub(crate) entry: &'a Entry,
    pub(crate) kind: ProbeKind,
    /// Where `livenessProbe:` (or the other key) is written.
    pub(crate) position: Position,
    pub(crate) handler: Handler,
    /// The handler keys present, with their positions, in the order the API server checks them
    /// (exactly one is valid; the first is the one judged).
    pub(crate) handler_keys: Vec<(&'static str, Position)>,
    /// The probe as the Kubernetes API decodes it, for its validation.
    pub(crate) spec: ProbeSpec,
    /// Fields of `spec` (paths relative to the probe: `httpGet`, `grpc.port`) written with a
    /// value the API cannot decode: reported as problems, and left out of `spec`, so what
    /// validation says about them is moot.
    pub(crate) undecodable: Vec<&'static str>,
    /// The numbers with the API server's defaults applied.
    pub(crate) timing: ProbeTiming,
    pub(crate) initial_delay: Setting,
    pub(crate) timeout: Setting,
    pub(crate) period: Setting,
    pub(crate) success: Setting,
    pub(crate) failure: Setting,
}

impl Probe<'_> {
    /// `failureThreshold × periodSeconds`, in seconds: how long the probe tolerates failure.
    pub(crate) fn failure_window(&self) -> i64 {
        whole_seconds(self.timing.failure_window())
    }

    /// `initialDelaySeconds + failureThreshold × periodSeconds`, in seconds: the first moment
    /// the probe can have given up on a container that never answers.
    pub(crate) fn budget(&self) -> i64 {
        whole_seconds(self.timing.budget())
    }

    /// `livenessProbe`, `readinessProbe` or `startupProbe`.
    pub(crate) fn key(&self) -> &'static str {
        self.kind.container_field()
    }

    /// Where `field` (a path relative to the probe, as validation names it: `httpGet.port`,
    /// `tcpSocket`, `successThreshold`, or empty for the probe itself) is written: a mapping's
    /// key, a scalar's value; the nearest written field around it when it is not written.
    pub(crate) fn position_of(&self, field: &str) -> Position {
        field_position(self.entry, field)
    }

    /// The scalar written at `field` (a path relative to the probe), if one is.
    pub(crate) fn written_scalar(&self, field: &str) -> Option<&Node> {
        written_scalar(self.entry, field)
    }

    /// Whether validation's word on `field` (relative to the probe) is moot, because the field
    /// or one around it could not be decoded.
    pub(crate) fn is_undecodable(&self, field: &str) -> bool {
        self.undecodable.iter().any(|undecodable| {
            field == *undecodable
                || field
                    .strip_prefix(undecodable)
                    .is_some_and(|rest| rest.starts_with('.'))
        })
    }
}

pub(super) fn read_probe<'a>(
    kind: ProbeKind,
    entry: &'a Entry,
    problems: &mut Vec<Problem>,
    container: &str,
) -> Probe<'a> {
    let position = entry.key_position;
    let node = &entry.value;
    let mut undecodable = Vec::new();
    let mut reader = Reader {
        problems,
        container,
        undecodable: &mut undecodable,
    };
    let handler_entry = |key: &str| node.entry(key).filter(|entry| !entry.value.is_null());
    let mut number = |key: &str| read_int(node, key, reader.problems, Some(container));
    let initial_delay = number("initialDelaySeconds");
    let timeout = number("timeoutSeconds");
    let period = number("periodSeconds");
    let success = number("successThreshold");
    let failure = number("failureThreshold");
    let termination_grace = number("terminationGracePeriodSeconds");
    let spec = ProbeSpec {
        exec: handler_entry("exec").map(|entry| reader.exec(entry)),
        http_get: handler_entry("httpGet").map(|entry| reader.http_get(entry)),
        tcp_socket: handler_entry("tcpSocket").map(|entry| reader.tcp_socket(entry)),
        grpc: handler_entry("grpc").map(|entry| reader.grpc(entry)),
        initial_delay_seconds: initial_delay.map(|(value, _)| value),
        timeout_seconds: timeout.map(|(value, _)| value),
        period_seconds: period.map(|(value, _)| value),
        success_threshold: success.map(|(value, _)| value),
        failure_threshold: failure.map(|(value, _)| value),
        termination_grace_period_seconds: termination_grace.map(|(value, _)| value),
    };
    let handler_keys: Vec<(&'static str, Position)> = spec
        .handler_keys()
        .into_iter()
        .filter_map(|key| Some((key, handler_entry(key)?.key_position)))
        .collect();
    // The handler judged is the first the API server checks; its text as written gives the
    // positions.
    let first = handler_keys
        .first()
        .and_then(|&(key, key_position)| Some((key, key_position, &handler_entry(key)?.value)));
    let handler = match (first, &spec) {
        (Some(("exec", key_position, value)), _) => Handler::Exec {
            command: spec
                .exec
                .as_ref()
                .and_then(|exec| exec.command.clone())
                .unwrap_or_default(),
            position: value
                .entry("command")
                .map_or(key_position, |command| command.key_position),
        },
        (
            Some(("httpGet", _, value)),
            ProbeSpec {
                http_get: Some(http),
                ..
            },
        ) => Handler::Http {
            path: http.path_or_default().to_owned(),
            path_position: value.get("path").map(|path| path.position),
            port: read_port(value),
            host: read_host(value),
            scheme: http.scheme_or_default().to_owned(),
        },
        (Some(("tcpSocket", _, value)), _) => Handler::Tcp {
            port: read_port(value),
            host: read_host(value),
        },
        (Some(("grpc", _, value)), _) => Handler::Grpc {
            port: read_port(value),
            service: spec
                .grpc
                .as_ref()
                .and_then(|grpc| grpc.service.clone())
                .unwrap_or_default(),
        },
        _ => Handler::Missing,
    };
    let timing = ProbeTiming::from_spec(&spec);
    let count = |count: u32| i64::from(count);
    Probe {
        entry,
        kind,
        position,
        handler,
        handler_keys,
        initial_delay: Setting::new(initial_delay, whole_seconds(timing.initial_delay)),
        timeout: Setting::new(timeout, whole_seconds(timing.timeout)),
        period: Setting::new(period, whole_seconds(timing.period)),
        success: Setting::new(success, count(timing.success_threshold)),
        failure: Setting::new(failure, count(timing.failure_threshold)),
        spec,
        undecodable,
        timing,
    }
}

/// Reads a probe's handlers into the API's types, recording what would not decode.
struct Reader<'r> {
    problems: &'r mut Vec<Problem>,
    container: &'r str,
    undecodable: &'r mut Vec<&'static str>,
}

impl Reader<'_> {
    fn problem(&mut self, node: &Node, field: &'static str, message: String) {
        self.problems.push(Problem {
            position: node.position,
            container: Some(self.container.to_owned()),
            message,
        });
        self.undecodable.push(field);
    }

    /// The handler's mapping; a handler that is not one is a problem (and reads as empty).
    fn mapping<'n>(&mut self, entry: &'n Entry, field: &'static str) -> Option<&'n Node> {
        if entry.value.as_map().is_some() {
            return Some(&entry.value);
        }
        let message = format!(
            "`{}` is {}, not a mapping",
            entry.key,
            entry.value.describe()
        );
        self.problem(&entry.value, field, message);
        None
    }

    fn text(node: Option<&Node>, key: &str) -> Option<String> {
        node?.get(key)?.scalar_text()
    }

    fn exec(&mut self, entry: &Entry) -> ExecAction {
        let Some(node) = self.mapping(entry, "exec") else {
            return ExecAction::default();
        };
        let command = match node.get("command") {
            None => None,
            Some(command) if command.is_null() => None,
            Some(command) => match command.as_seq() {
                Some(items) => Some(items.iter().filter_map(Node::scalar_text).collect()),
                None => {
                    let message =
                        format!("`command` is {}, not a list of words", command.describe());
                    self.problem(command, "exec.command", message);
                    None
                }
            },
        };
        ExecAction { command }
    }

    fn http_get(&mut self, entry: &Entry) -> HttpGetAction {
        let node = self.mapping(entry, "httpGet");
        HttpGetAction {
            path: Self::text(node, "path"),
            port: self.port(node, "httpGet.port"),
            host: Self::text(node, "host"),
            scheme: Self::text(node, "scheme"),
            http_headers: node
                .and_then(|node| node.get("httpHeaders"))
                .and_then(Node::as_seq)
                .map(|headers| {
                    headers
                        .iter()
                        .map(|header| HttpHeader {
                            name: Self::text(Some(header), "name").unwrap_or_default(),
                            value: Self::text(Some(header), "value").unwrap_or_default(),
                        })
                        .collect()
                }),
        }
    }

    fn tcp_socket(&mut self, entry: &Entry) -> TcpSocketAction {
        let node = self.mapping(entry, "tcpSocket");
        TcpSocketAction {
            port: self.port(node, "tcpSocket.port"),
            host: Self::text(node, "host"),
        }
    }

    fn grpc(&mut self, entry: &Entry) -> GrpcAction {
        let node = self.mapping(entry, "grpc");
        let port = match self.port(node, "grpc.port") {
            Some(IntOrString::Int(number)) => Some(number),
            // A gRPC port is a number; a name is the `grpc-named-port` rule's finding.
            Some(IntOrString::String(_)) => {
                self.undecodable.push("grpc.port");
                None
            }
            None => None,
        };
        GrpcAction {
            port,
            service: Self::text(node, "service"),
        }
    }

    /// A handler's `port`: a number or a name; anything else is a problem.
    fn port(&mut self, handler: Option<&Node>, field: &'static str) -> Option<IntOrString> {
        let node = handler?.get("port")?;
        match &node.value {
            Value::Int(number) => Some(IntOrString::Int(*number)),
            Value::String(name) => Some(IntOrString::String(name.clone())),
            Value::Null => None,
            _ => {
                let message = format!("`port` is {}, not a number or a name", node.describe());
                self.problem(node, field, message);
                None
            }
        }
    }
}

/// A handler's `port` with its position, as [`Reader::port`] decoded it.
pub(super) fn read_port(handler: &Node) -> Option<Port> {
    let node = handler.get("port")?;
    let port = match &node.value {
        Value::Int(number) => IntOrString::Int(*number),
        Value::String(name) => IntOrString::String(name.clone()),
        _ => return None,
    };
    Some(Port {
        port,
        position: node.position,
    })
}

pub(super) fn read_host(handler: &Node) -> Option<Host> {
    let node = handler.get("host")?;
    let name = node.scalar_text()?;
    (!name.is_empty()).then_some(Host {
        name,
        position: node.position,
    })
}
