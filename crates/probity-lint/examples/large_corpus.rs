//! Writes a large manifest stream to standard output, for measuring `probity lint` on big
//! inputs: by default 160,000 documents (about 50 MB), small workloads with the kinds and mistakes
//! the throughput benchmark uses, each followed by the Service that selects it.
//!
//! ```sh
//! cargo run --release -p probity-lint --example large_corpus > /tmp/large.yaml
//! /usr/bin/time -v target/release/probity lint --format sarif /tmp/large.yaml > /dev/null
//! cargo run --release -p probity-lint --example large_corpus -- 20000   # fewer documents
//! ```

use std::io::{BufWriter, Write};

fn main() -> std::io::Result<()> {
    let documents: usize = match std::env::args().nth(1) {
        Some(count) => count.parse().map_err(|_| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("`{count}` is not a number of documents"),
            )
        })?,
        None => 160_000,
    };
    let mut out = BufWriter::new(std::io::stdout().lock());
    let mut written = 0;
    let mut index = 0;
    while written < documents {
        let kind = match index % 10 {
            0..=7 => "Deployment",
            8 => "StatefulSet",
            _ => "DaemonSet",
        };
        let replicas = if kind == "DaemonSet" {
            String::new()
        } else {
            format!("\n  replicas: {}", 1 + index % 6)
        };
        // A quarter share one endpoint between probes, some mistype a field, some time out badly.
        let readiness = if index % 4 == 0 { "/health" } else { "/readyz" };
        let delay = if index % 13 == 0 {
            "initialDelaySecond"
        } else {
            "initialDelaySeconds"
        };
        let timeout = if index % 17 == 0 { 10 } else { 1 };
        write!(
            out,
            "---\napiVersion: apps/v1\nkind: {kind}\nmetadata: {{name: svc-{index}, namespace: team-{team}}}\n\
             spec:{replicas}\n  selector: {{matchLabels: {{app: svc-{index}}}}}\n  template:\n    \
             metadata: {{labels: {{app: svc-{index}}}}}\n    spec:\n      containers:\n      - name: app\n        \
             image: svc:{index}\n        livenessProbe: {{httpGet: {{path: /livez, port: 8080}}, {delay}: 5, \
             timeoutSeconds: {timeout}}}\n        readinessProbe: {{httpGet: {{path: {readiness}, port: 8080}}, \
             periodSeconds: 5}}\n",
            team = index % 50,
        )?;
        written += 1;
        if written < documents {
            write!(
                out,
                "---\napiVersion: v1\nkind: Service\nmetadata: {{name: svc-{index}, namespace: team-{team}}}\n\
                 spec: {{selector: {{app: svc-{index}}}, ports: [{{port: 80}}]}}\n",
                team = index % 50,
            )?;
            written += 1;
        }
        index += 1;
    }
    out.flush()
}
