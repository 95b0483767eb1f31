//! A starting drill file, written from a manifest: what the manifest says is taken as said,
//! and every guess is marked `# GUESS:` with what to check.
//!
//! The probes stay in the manifest (`manifest: {file, container}`), so `lint`, `simulate` and
//! `drill` read one source. Guessed: the command (a manifest names an image, not a program on
//! this machine), the traffic port among several, the dependencies (from environment variables
//! that look like addresses), the environment values a Secret or ConfigMap holds, and the
//! traffic (`GET /`).

use super::pod::read_manifest;
use std::fmt::Write as _;
use std::path::Path;

/// The default port of the schemes a dependency URL commonly has.
fn scheme_port(scheme: &str) -> Option<u16> {
    Some(match scheme {
        "postgres" | "postgresql" => 5432,
        "mysql" | "mariadb" => 3306,
        "redis" | "rediss" => 6379,
        "amqp" => 5672,
        "amqps" => 5671,
        "mqtt" => 1883,
        "nats" => 4222,
        "mongodb" => 27017,
        "http" => 80,
        "https" => 443,
        _ => return None,
    })
}

/// A local address for a dependency the manifest names by environment variable only.
fn guess_dependency(variable: &str) -> Option<(&'static str, String)> {
    let upper = variable.to_ascii_uppercase();
    let guesses: [(&[&str], &str, &str); 6] = [
        (
            &["DATABASE", "POSTGRES", "PG", "DB_"],
            "db",
            "postgres://postgres@127.0.0.1:5432/test",
        ),
        (
            &["MYSQL", "MARIADB"],
            "db",
            "mysql://root@127.0.0.1:3306/test",
        ),
        (&["REDIS", "CACHE"], "cache", "redis://127.0.0.1:6379"),
        (
            &["AMQP", "RABBIT"],
            "broker",
            "amqp://guest:guest@127.0.0.1:5672/%2f",
        ),
        (&["MQTT"], "mqtt", "mqtt://127.0.0.1:1883"),
        (&["NATS"], "nats", "nats://127.0.0.1:4222"),
    ];
    guesses
        .iter()
        .find(|(needles, _, _)| needles.iter().any(|needle| upper.contains(needle)))
        .map(|(_, name, url)| (*name, (*url).to_owned()))
}

fn quote(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| "\"\"".to_owned())
}

/// Replaces `0.0.0.0:PORT`, `:PORT` and `localhost:PORT` in an argument with
/// `127.0.0.1:{placeholder}` when PORT is one of the container's ports.
fn localize(arg: &str, ports: &[(String, u16)], traffic: u16) -> (String, bool) {
    for (name, port) in ports {
        let placeholder = if *port == traffic {
            "{port}".to_owned()
        } else {
            format!("{{port.{name}}}")
        };
        for host in ["0.0.0.0:", "127.0.0.1:", "localhost:", "[::]:", ":"] {
            let needle = format!("{host}{port}");
            if arg.ends_with(&needle) || arg.contains(&format!("{needle} ")) {
                return (
                    arg.replace(&needle, &format!("127.0.0.1:{placeholder}")),
                    true,
                );
            }
        }
        if arg.ends_with(&format!("={port}")) {
            return (
                format!(
                    "{}={placeholder}",
                    &arg[..arg.len() - port.to_string().len() - 1]
                ),
                true,
            );
        }
    }
    (arg.to_owned(), false)
}

/// Writes a starting drill file for `container` in the manifest at `manifest`; `manifest_ref`
/// is how the drill file names the manifest (relative to where the drill file will be).
pub fn starting_file(
    manifest: &Path,
    container: &str,
    manifest_ref: &str,
) -> Result<String, String> {
    let read = read_manifest(manifest, container)?;
    let raw = &read.raw;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# A drill file written by `probity drill init` from {} ({}, container {container}).\n\
         # Every `# GUESS:` is a value the manifest does not say: check each before running\n\
         # `probity drill --file THIS_FILE`. The format: docs/drill.md.",
        manifest_ref, read.workload
    );
    let service: String = container
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect();
    let _ = writeln!(out, "service: {service}");
    let _ = writeln!(out, "instances: 3");

    // Ports: the one named http (or the first) carries traffic.
    let mut ports: Vec<(String, u16)> = Vec::new();
    for port in raw
        .get("ports")
        .and_then(|p| p.as_array())
        .into_iter()
        .flatten()
    {
        if let Some(number) = port
            .get("containerPort")
            .and_then(|n| n.as_u64())
            .and_then(|n| u16::try_from(n).ok())
            .filter(|n| *n > 0)
        {
            let name = port
                .get("name")
                .and_then(|n| n.as_str())
                .map_or_else(|| format!("port{number}"), str::to_owned);
            ports.push((name, number));
        }
    }
    let probe_port = ["readinessProbe", "livenessProbe", "startupProbe"]
        .iter()
        .find_map(|probe| {
            let handler = raw.get(*probe)?;
            let port = handler
                .pointer("/httpGet/port")
                .or_else(|| handler.pointer("/tcpSocket/port"))?;
            match port {
                serde_json::Value::Number(n) => n.as_u64().and_then(|n| u16::try_from(n).ok()),
                serde_json::Value::String(name) => ports
                    .iter()
                    .find(|(declared, _)| declared == name)
                    .map(|(_, number)| *number),
                _ => None,
            }
        });
    let (traffic_port, traffic_guess) = match ports.iter().find(|(name, _)| name == "http") {
        Some((_, number)) => (*number, None),
        None => match ports.as_slice() {
            [(_, only)] => (*only, None),
            [(_, first), ..] => (
                *first,
                Some("the first of several ports; set the one that serves requests"),
            ),
            [] => match probe_port {
                Some(port) => (port, Some("the probes' port; the manifest declares none")),
                None => (8080, Some("the manifest declares no port")),
            },
        },
    };

    // Command: the container's command and args, with listen addresses made local.
    let words = |key: &str| -> Vec<String> {
        raw.get(key)
            .and_then(|v| v.as_array())
            .into_iter()
            .flatten()
            .filter_map(|w| w.as_str().map(str::to_owned))
            .collect()
    };
    let mut command = words("command");
    let args = words("args");
    let command_guess = command.is_empty();
    if command_guess {
        command.push("./start".to_owned());
    }
    command.extend(args);
    out.push_str("app:\n");
    if command_guess {
        out.push_str(
            "  # GUESS: the manifest runs the image's entrypoint; write the program and its\n  \
             # arguments as run on this machine, listening on 127.0.0.1:{port}.\n",
        );
    }
    out.push_str("  command:\n");
    for word in &command {
        let (local, changed) = localize(word, &ports, traffic_port);
        if changed {
            let _ = writeln!(
                out,
                "    - {}   # GUESS: was {}; each instance listens on its own port",
                quote(&local),
                quote(word)
            );
        } else if word.contains("$(") {
            let _ = writeln!(
                out,
                "    - {}   # $(VAR) is expanded from app.env, as Kubernetes does",
                quote(word)
            );
        } else {
            let _ = writeln!(out, "    - {}", quote(word));
        }
    }
    if let Some(dir) = raw.get("workingDir").and_then(|d| d.as_str()) {
        let _ = writeln!(
            out,
            "  workdir: {}   # GUESS: the container's folder; relative to this file here",
            quote(dir.trim_start_matches('/'))
        );
    }

    // Environment and dependencies.
    let mut dependencies: Vec<(String, String, String)> = Vec::new();
    let env: Vec<&serde_json::Value> = raw
        .get("env")
        .and_then(|e| e.as_array())
        .map(|e| e.iter().collect())
        .unwrap_or_default();
    if !env.is_empty() {
        out.push_str("  env:\n");
    }
    for variable in env {
        let Some(name) = variable.get("name").and_then(|n| n.as_str()) else {
            continue;
        };
        let value = variable.get("value").and_then(|v| v.as_str());
        let from_url = value.and_then(|value| {
            let (scheme, _) = value.split_once("://")?;
            let port = crate::address::url_target(value).map(|(_, port)| port);
            scheme_port(scheme).map(|default| (value.to_owned(), port.unwrap_or(default)))
        });
        if let Some((url, _)) = from_url {
            let dep = format!("dep{}", dependencies.len() + 1);
            let _ = writeln!(
                out,
                "    {name}: \"{{dep.{dep}.url}}\"   # through the drill's fault proxy"
            );
            dependencies.push((dep, url, format!("from {name} as written")));
        } else if let Some(value) = value {
            let (local, changed) = localize(value, &ports, traffic_port);
            let mark = if changed {
                "   # GUESS: made local"
            } else {
                ""
            };
            let _ = writeln!(out, "    {name}: {}{mark}", quote(&local));
        } else if let Some((dep, url)) = guess_dependency(name) {
            let dep = if dependencies.iter().any(|(d, _, _)| d == dep) {
                format!("{dep}{}", dependencies.len() + 1)
            } else {
                dep.to_owned()
            };
            let _ = writeln!(
                out,
                "    {name}: \"{{dep.{dep}.url}}\"   # GUESS: from a Secret or ConfigMap; \
                 the drill's fault proxy in front of dependencies.{dep}"
            );
            dependencies.push((
                dep,
                url,
                format!("GUESS: {name} comes from a Secret or ConfigMap; a local one"),
            ));
        } else {
            let _ = writeln!(
                out,
                "    {name}: \"\"   # GUESS: from a Secret or ConfigMap; write the value"
            );
        }
    }
    match traffic_guess {
        Some(why) => {
            let _ = writeln!(out, "  port: {traffic_port}   # GUESS: {why}");
        }
        None => {
            let _ = writeln!(out, "  port: {traffic_port}");
        }
    }
    let others: Vec<&(String, u16)> = ports.iter().filter(|(_, n)| *n != traffic_port).collect();
    if !others.is_empty() {
        out.push_str("  ports:\n");
        for (name, number) in others {
            let _ = writeln!(out, "    {name}: {number}");
        }
    }
    let _ = writeln!(
        out,
        "manifest:   # the probes, preStop and grace period, read as `probity lint` reads them\n  \
         file: {}\n  container: {}",
        quote(manifest_ref),
        quote(container)
    );
    if dependencies.is_empty() {
        out.push_str(
            "# GUESS: no dependency found in the manifest's environment; name each one the app\n\
             # reaches (a URL or host:port) and point the app at {dep.NAME.url} or\n\
             # {dep.NAME.address}, so the drill can break it.\ndependencies: {}\n",
        );
    } else {
        out.push_str("dependencies:\n");
        for (name, url, note) in &dependencies {
            let _ = writeln!(out, "  {name}:   # {note}\n    url: {}", quote(url));
        }
    }
    out.push_str(
        "traffic:\n  concurrency: 32\n  requests:   # GUESS: the requests the service serves, \
         with their shares\n    - method: GET\n      path: /\n      share: 1\n\
         balancer:\n  mode: kubernetes\n  propagation: 1s\n\
         # faults: absent, every fault that applies runs (see docs/drill.md)\n",
    );
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn localizes_listen_addresses() {
        let ports = vec![("http".to_owned(), 8080), ("admin".to_owned(), 8081)];
        assert_eq!(
            localize("--listen=0.0.0.0:8080", &ports, 8080),
            ("--listen=127.0.0.1:{port}".to_owned(), true)
        );
        assert_eq!(
            localize("--admin-listen=0.0.0.0:8081", &ports, 8080),
            ("--admin-listen=127.0.0.1:{port.admin}".to_owned(), true)
        );
        assert_eq!(
            localize("--port=8080", &ports, 8080),
            ("--port={port}".to_owned(), true)
        );
        assert_eq!(
            localize("--verbose", &ports, 8080),
            ("--verbose".to_owned(), false)
        );
    }
}
