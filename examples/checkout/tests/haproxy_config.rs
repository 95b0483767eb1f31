//! The shipped HAProxy configuration and checkout's drill file say the same about the balancer:
//! what the drill proves (checks on `/readyz` every 250 ms, rise 2, fall 1, a 500 ms check
//! timeout, a 503 or a failed connection retried on another server) is what the configuration
//! a team copies does.

use std::path::Path;

fn read(relative: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

/// The drill file's `balancer:` lines, comments left out.
fn balancer(drill: &str) -> Vec<String> {
    drill
        .lines()
        .skip_while(|line| *line != "balancer:")
        .skip(1)
        .take_while(|line| line.starts_with(' '))
        .map(|line| line.trim().to_owned())
        .filter(|line| !line.starts_with('#'))
        .collect()
}

#[test]
fn the_shipped_haproxy_config_checks_and_retries_as_checkout_s_drill_file_does() {
    let config = read("../../deploy/haproxy/haproxy.cfg");
    let lines: Vec<&str> = config.lines().map(str::trim).collect();
    for drill_file in ["drill.yaml", "drill-degraded.yaml", "drill-broker.yaml"] {
        let drill = balancer(&read(drill_file));
        assert_eq!(
            drill,
            [
                "mode: haproxy",
                "check: { inter: 250ms, rise: 2, fall: 1, timeout: 500ms }",
                "retry_on: [conn-failure, \"503\"]",
            ],
            "{drill_file}'s balancer changed: change deploy/haproxy/haproxy.cfg with it"
        );
    }
    for expected in [
        "option httpchk GET /readyz",
        "default-server check inter 250ms rise 2 fall 1",
        "timeout check 500ms",
        "retry-on conn-failure 503",
        "option redispatch 1",
    ] {
        assert!(
            lines.contains(&expected),
            "deploy/haproxy/haproxy.cfg lacks `{expected}`, which checkout's drill files prove"
        );
    }
}
