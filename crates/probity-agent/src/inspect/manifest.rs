//! The probes of a Kubernetes manifest, for `probity inspect --manifest`: each container's
//! `httpGet` probes with the path, port and timeout the kubelet will use.

use super::Role;
use serde_json::Value;
use std::path::Path;

/// One `httpGet` probe of a manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestProbe {
    /// The container.
    pub container: String,
    /// Which probe.
    pub role: Role,
    /// `httpGet.path` (default `/`).
    pub path: String,
    /// `httpGet.port` as written: a number or a port name.
    pub port: String,
    /// The port number, when the name resolves.
    pub port_number: Option<u16>,
    /// `timeoutSeconds` (default 1).
    pub timeout_seconds: u32,
}

impl ManifestProbe {
    /// Whether the probe's port is the URL's (a port name that does not resolve matches any).
    pub(crate) fn port_matches(&self, url: &reqwest::Url) -> bool {
        match (self.port_number, url.port_or_known_default()) {
            (Some(probe), Some(port)) => probe == port,
            _ => true,
        }
    }
}

/// Why a manifest could not be read.
#[derive(Debug, thiserror::Error)]
#[error("{file}: {message}")]
pub struct ManifestError {
    file: String,
    message: String,
}

/// Largest manifest read.
const MAX_MANIFEST_BYTES: u64 = 8 << 20;

/// Reads every `httpGet` probe of every container (init containers included) in a
/// multi-document manifest.
pub fn read_manifest(path: &Path) -> Result<Vec<ManifestProbe>, ManifestError> {
    use std::io::Read;
    let error = |message: String| ManifestError {
        file: path.display().to_string(),
        message,
    };
    let file = std::fs::File::open(path).map_err(|e| error(e.to_string()))?;
    let mut text = String::new();
    file.take(MAX_MANIFEST_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|e| error(format!("not UTF-8 text: {e}")))?;
    if text.len() as u64 > MAX_MANIFEST_BYTES {
        return Err(error("larger than 8 MiB: not a manifest".into()));
    }
    let documents: Vec<Value> = serde_saphyr::from_str_multiple(&text)
        .map_err(|e| error(e.without_snippet().to_string()))?;
    let mut probes = Vec::new();
    for document in &documents {
        for spec in pod_specs(document) {
            for field in ["containers", "initContainers"] {
                for container in spec
                    .get(field)
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    collect(container, &mut probes);
                }
            }
        }
    }
    Ok(probes)
}

fn pod_specs(document: &Value) -> Vec<&Value> {
    let spec = document.get("spec");
    [
        spec,
        spec.and_then(|spec| spec.get("template"))
            .and_then(|t| t.get("spec")),
        spec.and_then(|spec| spec.get("jobTemplate"))
            .and_then(|t| t.get("spec"))
            .and_then(|s| s.get("template"))
            .and_then(|t| t.get("spec")),
    ]
    .into_iter()
    .flatten()
    .filter(|spec| spec.get("containers").is_some())
    .collect()
}

fn collect(container: &Value, probes: &mut Vec<ManifestProbe>) {
    let name = container
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("?")
        .to_owned();
    let ports: Vec<(String, u16)> = container
        .get("ports")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|port| {
            Some((
                port.get("name")?.as_str()?.to_owned(),
                u16::try_from(port.get("containerPort")?.as_u64()?).ok()?,
            ))
        })
        .collect();
    for (field, role) in [
        ("livenessProbe", Role::Liveness),
        ("readinessProbe", Role::Readiness),
        ("startupProbe", Role::Startup),
    ] {
        let Some(probe) = container.get(field) else {
            continue;
        };
        let Some(http) = probe.get("httpGet") else {
            continue;
        };
        let path = http
            .get("path")
            .and_then(Value::as_str)
            .unwrap_or("/")
            .to_owned();
        let (port, port_number) = match http.get("port") {
            Some(Value::Number(number)) => (
                number.to_string(),
                number.as_u64().and_then(|n| u16::try_from(n).ok()),
            ),
            Some(Value::String(text)) => (
                text.clone(),
                text.parse().ok().or_else(|| {
                    ports
                        .iter()
                        .find(|(port, _)| port == text)
                        .map(|(_, number)| *number)
                }),
            ),
            _ => ("?".to_owned(), None),
        };
        let timeout_seconds = probe
            .get("timeoutSeconds")
            .and_then(Value::as_u64)
            .and_then(|seconds| u32::try_from(seconds).ok())
            .unwrap_or(1);
        probes.push(ManifestProbe {
            container: name.clone(),
            role,
            path,
            port,
            port_number,
            timeout_seconds,
        });
    }
}
