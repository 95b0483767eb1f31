use super::*;

fn words(command: &[&str]) -> Vec<String> {
    command.iter().map(|word| (*word).to_owned()).collect()
}

fn judged(command: &[&str]) -> Option<String> {
    cannot_fail(&parse(&words(command))?)
}

#[test]
fn commands_that_cannot_fail() {
    for command in [
        &["true"][..],
        &["/bin/true"],
        &["echo", "ok"],
        &["sh", "-c", "exit 0"],
        &["/bin/sh", "-c", "true"],
        &["cat", "/proc/1/status"],
        &["test", "-d", "/proc/1"],
        &["ls", "/"],
        &["sh", "-c", "curl -f http://localhost:8080/healthz || true"],
        &["sh", "-c", "curl -s localhost:8080/health; exit 0"],
        &["sh", "-c", "wget -q -O- localhost:8080/health | cat"],
        &["sh", "-c", "ps aux | grep nginx"],
        &["sh", "-c", "[ -e /proc/self/status ] && echo alive"],
        &["bash", "-c", "cat /etc/hostname > /dev/null 2>&1"],
        &["sh", "-c", ":"],
    ] {
        assert!(judged(command).is_some(), "{command:?} can fail?");
    }
}

#[test]
fn commands_that_can_fail() {
    for command in [
        &["cat", "/tmp/healthy"][..],
        &["test", "-f", "/tmp/ready"],
        &["sh", "-c", "curl -f http://localhost:8080/healthz"],
        &["sh", "-c", "true && curl -f localhost:8080/health"],
        &["sh", "-ec", "curl -f localhost:8080/health; echo ok"],
        &["sh", "-c", "set -e; curl -f localhost:8080/health; echo ok"],
        &[
            "bash",
            "-o",
            "pipefail",
            "-c",
            "curl -f localhost/health | cat",
        ],
        &["sh", "-c", "ps aux | grep -v grep | grep nginx"],
        &["sh", "-c", "ps aux | grep [n]ginx"],
        &["pgrep", "nginx"],
        &["sh", "-c", "if true; then exit 0; fi"],
        &["sh", "-c", "echo $(curl localhost)"],
        &["exit", "0"],
        &["cat", "/proc"],
        &["test", "-s", "/proc/1/status"],
        &["sh", "-c", "echo ok > /tmp/probe"],
        &["redis-cli", "ping"],
        &["sh", "/probe.sh"],
        &["sh", "-c", "curl localhost &"],
    ] {
        assert!(judged(command).is_none(), "{command:?} cannot fail?");
    }
}

#[test]
fn finds_fetched_urls_and_expands_the_environment() {
    let env = vec![("PAYMENTS_URL".to_owned(), "http://payments:8080".to_owned())];
    let found = fetches(
        &words(&[
            "sh",
            "-c",
            "curl -sf ${PAYMENTS_URL}/health && curl -f http://localhost:8080/ready",
        ]),
        &env,
    );
    assert_eq!(found.len(), 2);
    assert_eq!(found[0].host.as_deref(), Some("payments"));
    assert_eq!(found[0].path, "/health");
    assert_eq!(found[1].host.as_deref(), Some("localhost"));
    let kubelet = fetches(
        &words(&["wget", "-qO-", "http://$(PAYMENTS_HOST)/healthz"]),
        &[],
    );
    assert_eq!(kubelet[0].host, None);
    let grpc = fetches(
        &words(&["/bin/grpc_health_probe", "-addr=ledger:9090"]),
        &[],
    );
    assert_eq!(grpc[0].host.as_deref(), Some("ledger"));
    assert!(grpc[0].grpc_health);
}

#[test]
fn recognises_health_paths() {
    assert!(is_health_path("/health"));
    assert!(is_health_path("/actuator/health/liveness"));
    assert!(is_health_path("/-/healthy"));
    assert!(is_health_path("/api/v1/ping"));
    assert!(!is_health_path("/api/orders"));
    assert!(!is_health_path("/"));
}
