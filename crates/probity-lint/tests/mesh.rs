//! What the Istio rules tell a reader: what the probe does under the sidecar, where the setting
//! is, and how to fix it, without `--explain`.

use probity_lint::{Options, Source, lint};

const TCP_PROBE_WITHOUT_REWRITE: &str = "\
apiVersion: apps/v1
kind: Deployment
metadata: {name: orders}
spec:
  selector: {matchLabels: {app: orders}}
  template:
    metadata:
      labels: {app: orders}
      annotations:
        sidecar.istio.io/rewriteAppHTTPProbers: \"false\"
    spec:
      containers:
      - name: orders
        image: orders:1
        ports: [{containerPort: 8080}]
        readinessProbe:
          tcpSocket: {port: 8080}
";

#[test]
fn a_tcp_probe_without_the_rewrite_says_it_always_passes_and_how_to_fix_it() {
    let report = lint(
        &[Source::new("orders.yaml", TCP_PROBE_WITHOUT_REWRITE)],
        &Options::default(),
    );
    let finding = report
        .findings
        .iter()
        .find(|finding| finding.rule == "tcp-probe-passes-under-istio")
        .unwrap_or_else(|| panic!("no finding: {:?}", report.findings));
    assert_eq!(finding.line, 16, "{finding:?}");
    for said in [
        "readiness probe is a TCP connect to port 8080",
        "(line 10)",
        "always passes while the proxy runs",
        "whatever `orders` does",
    ] {
        assert!(
            finding.message.contains(said),
            "{said:?} in {}",
            finding.message
        );
    }
    assert!(
        finding
            .fix
            .contains("Remove `sidecar.istio.io/rewriteAppHTTPProbers: \"false\"`")
            && finding.fix.contains("HTTP or gRPC endpoint"),
        "{}",
        finding.fix
    );
}

#[test]
fn the_rewrite_switch_on_the_deployment_says_it_is_ignored_and_what_stays() {
    // The switch moved from the pod template to the Deployment's own metadata.
    let text = TCP_PROBE_WITHOUT_REWRITE
        .replace(
            "      annotations:\n        sidecar.istio.io/rewriteAppHTTPProbers: \"false\"\n",
            "",
        )
        .replace(
            "metadata: {name: orders}",
            "metadata:\n  name: orders\n  annotations: {sidecar.istio.io/rewriteAppHTTPProbers: \"false\"}",
        );
    assert_ne!(text, TCP_PROBE_WITHOUT_REWRITE);
    let report = lint(&[Source::new("orders.yaml", &text)], &Options::default());
    let finding = report
        .findings
        .iter()
        .find(|finding| finding.rule == "istio-setting-on-workload")
        .unwrap_or_else(|| panic!("no finding: {:?}", report.findings));
    for said in [
        "on the Deployment's own metadata",
        "Istio reads it from the pod",
        "the probe rewrite stays as the mesh configures it",
    ] {
        assert!(
            finding.message.contains(said),
            "{said:?} in {}",
            finding.message
        );
    }
    // Ignored there, the switch leaves the rewrite on: the TCP probe goes through pilot-agent.
    assert!(
        report
            .findings
            .iter()
            .all(|finding| finding.rule != "tcp-probe-passes-under-istio"),
        "{:?}",
        report.findings
    );
    assert!(
        finding.fix.contains("spec.template.metadata.annotations"),
        "{}",
        finding.fix
    );
}
