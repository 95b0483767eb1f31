//! The probes of a Kubernetes manifest, for `probity inspect --manifest`: each container's
//! `httpGet` probes with the path, port and timeout the kubelet will use.
//!
//! Each probe is read as probity-contract's [`ProbeSpec`] — the Kubernetes model `probity lint`
//! and `probity simulate` read — and resolved with the API server's validation and defaults
//! (`SetDefaults_Probe`: `timeoutSeconds` 1 when unset or 0), so a probe the API server would
//! reject is an error naming the object, the container and the field.

use super::Role;
use probity_contract::ProbeKind;
use probity_contract::kube::probe::{Handler, IntOrString, ProbeSpec, Scheme};
use serde::Deserialize;
use serde_json::Value;
use std::path::Path;
use std::time::Duration;

/// One `httpGet` probe of a manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestProbe {
    /// The container.
    pub container: String,
    /// Which probe.
    pub role: Role,
    /// `httpGet.path`, defaulted.
    pub path: String,
    /// `httpGet.port` as written: a number or a port name.
    pub port: String,
    /// The port number, when the name resolves.
    pub port_number: Option<u16>,
    /// `httpGet.scheme`, defaulted: `http` or `https`.
    pub scheme: &'static str,
    /// `timeoutSeconds`, defaulted.
    pub timeout: Duration,
}

impl ManifestProbe {
    /// Whether the probe calls `url`: the same path, and the same port (a port name that does
    /// not resolve matches any).
    pub(crate) fn calls(&self, url: &reqwest::Url) -> bool {
        self.path == url.path()
            && match (self.port_number, url.port_or_known_default()) {
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

/// The fields of a container `inspect` reads; the others are left to `probity lint`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Container {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    ports: Vec<ContainerPort>,
    #[serde(default)]
    liveness_probe: Option<Value>,
    #[serde(default)]
    readiness_probe: Option<Value>,
    #[serde(default)]
    startup_probe: Option<Value>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ContainerPort {
    #[serde(default)]
    name: Option<String>,
    container_port: i64,
}

/// Reads every `httpGet` probe of every container (init containers included) in a
/// multi-document manifest.
pub fn read_manifest(path: &Path) -> Result<Vec<ManifestProbe>, ManifestError> {
    let error = |message: String| ManifestError {
        file: probity_contract::text::escape_control(&path.display().to_string()).into_owned(),
        message: probity_contract::text::escape_control(&message).into_owned(),
    };
    // A FIFO or a device is refused before it is opened: the open would block, or the read
    // never end.
    let text = probity_contract::file::read_text(path, MAX_MANIFEST_BYTES)
        .map_err(|e| error(e.to_string()))?;
    let documents: Vec<Value> = serde_saphyr::from_str_multiple(&text)
        .map_err(|e| error(e.without_snippet().to_string()))?;
    let mut probes = Vec::new();
    for document in &documents {
        let object = format!(
            "{}/{}",
            document.get("kind").and_then(Value::as_str).unwrap_or("?"),
            document
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or("?")
        );
        for spec in pod_specs(document) {
            for field in ["containers", "initContainers"] {
                for (index, container) in spec
                    .get(field)
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .enumerate()
                {
                    let container: Container = serde_json::from_value(container.clone())
                        .map_err(|e| error(format!("{object}: {field}[{index}]: {e}")))?;
                    collect(&container, &mut probes)
                        .map_err(|message| error(format!("{object}: {message}")))?;
                }
            }
        }
    }
    Ok(probes)
}

/// The pod specs of a workload: a Pod's own, a controller's template, a CronJob's job's.
fn pod_specs(document: &Value) -> Vec<&Value> {
    [
        "/spec",
        "/spec/template/spec",
        "/spec/jobTemplate/spec/template/spec",
    ]
    .into_iter()
    .filter_map(|pointer| document.pointer(pointer))
    .filter(|spec| spec.get("containers").is_some())
    .collect()
}

fn collect(container: &Container, probes: &mut Vec<ManifestProbe>) -> Result<(), String> {
    let name = container.name.clone().unwrap_or_else(|| "?".to_owned());
    for (field, value, kind, role) in [
        (
            "livenessProbe",
            &container.liveness_probe,
            ProbeKind::Liveness,
            Role::Liveness,
        ),
        (
            "readinessProbe",
            &container.readiness_probe,
            ProbeKind::Readiness,
            Role::Readiness,
        ),
        (
            "startupProbe",
            &container.startup_probe,
            ProbeKind::Startup,
            Role::Startup,
        ),
    ] {
        let Some(value) = value else {
            continue;
        };
        let at = |message: String| format!("container {name}: {field}: {message}");
        let spec: ProbeSpec =
            serde_json::from_value(value.clone()).map_err(|e| at(e.to_string()))?;
        let probe = spec
            .resolve(kind)
            .map_err(|violation| at(violation.to_string()))?;
        let Handler::HttpGet {
            path, port, scheme, ..
        } = probe.handler
        else {
            continue;
        };
        // The kubelet resolves a port name among the container's own ports
        // (pkg/kubelet/prober/prober.go, `findPortByName`).
        let port_number = match &port {
            IntOrString::Int(number) => u16::try_from(*number).ok(),
            IntOrString::String(text) => container
                .ports
                .iter()
                .find(|port| port.name.as_deref() == Some(text.as_str()))
                .and_then(|port| u16::try_from(port.container_port).ok()),
        };
        probes.push(ManifestProbe {
            container: name.clone(),
            role,
            path,
            port: match &port {
                IntOrString::Int(number) => number.to_string(),
                IntOrString::String(name) => name.clone(),
            },
            port_number,
            scheme: match scheme {
                Scheme::Http => "http",
                Scheme::Https => "https",
            },
            timeout: probe.timing.timeout,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manifest_path_that_is_not_a_regular_file_is_refused_before_it_is_opened() {
        let dir =
            std::env::temp_dir().join(format!("probity-agent-manifest-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("deployment.yaml");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        // No writer ever comes: a read that opened it would block, so it runs on a thread the
        // test waits for with a deadline.
        let (sender, receiver) = std::sync::mpsc::channel();
        let path = fifo.clone();
        std::thread::spawn(move || {
            let _ = sender.send(read_manifest(&path).map(|_| ()));
        });
        let error = receiver
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("the read returned rather than blocked")
            .unwrap_err()
            .to_string();
        assert!(error.contains(&fifo.display().to_string()), "{error}");
        assert!(error.contains("a FIFO, not a regular file"), "{error}");
        let error = read_manifest(Path::new("/dev/zero"))
            .unwrap_err()
            .to_string();
        assert!(error.contains("a device, not a regular file"), "{error}");
        let error = read_manifest(&dir).unwrap_err().to_string();
        assert!(error.contains("a directory, not a regular file"), "{error}");
        let _ = std::fs::remove_dir_all(dir);
    }
}
