use super::*;

fn toml(text: &str) -> Result<Config, ConfigError> {
    Config::parse(text, Format::Toml, Path::new("agent.toml"))
}

fn yaml(text: &str) -> Result<Config, ConfigError> {
    Config::parse(text, Format::Yaml, Path::new("agent.yaml"))
}

fn error_at(result: Result<Config, ConfigError>, line: usize, needle: &str) {
    let error = result.expect_err("the configuration is refused");
    assert_eq!(error.line(), Some(line), "{error}");
    let text = error.to_string();
    assert!(text.contains(needle), "{text}");
}

#[test]
fn the_examples_parse() {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/agent");
    let node = Config::load(&examples.join("node.toml")).unwrap();
    assert_eq!(node.readiness.0.len(), 2);
    assert!(matches!(
        node.liveness.0[0].1.kind,
        LivenessKind::EventLoopLag(_)
    ));
    let python = Config::load(&examples.join("python.yaml")).unwrap();
    assert_eq!(python.readiness.0.len(), 3);
    assert!(matches!(
        python.liveness.0[0].1.kind,
        LivenessKind::AppLiveness(_)
    ));
}

#[test]
fn unknown_keys_are_named_with_their_line_in_both_formats() {
    error_at(
        toml("service = \"a\"\nbogus = 1\n"),
        2,
        "unknown field `bogus`",
    );
    error_at(yaml("service: a\nbogus: 1\n"), 2, "unknown field `bogus`");
    let toml_text = "[readiness.db]\ntier = \"hard\"\nintervl = \"2s\"\npostgres = { url = \"postgres://x\" }\n";
    error_at(
        toml(toml_text),
        3,
        "unknown key `intervl` in a readiness check",
    );
    let yaml_text =
        "readiness:\n  db:\n    tier: hard\n    intervl: 2s\n    postgres: {url: postgres://x}\n";
    error_at(
        yaml(yaml_text),
        4,
        "unknown key `intervl` in a readiness check",
    );
    error_at(
        toml("[readiness.db]\npostgres = { url = \"postgres://x\", pool = 3 }\n"),
        2,
        "unknown field `pool`",
    );
    error_at(
        yaml("readiness:\n  db:\n    postgres:\n      url: postgres://x\n      pool: 3\n"),
        5,
        "unknown field `pool`",
    );
    error_at(toml("[listen]\nport = 1\n"), 2, "unknown field `port`");
    error_at(yaml("paths:\n  ready: /r\n"), 2, "unknown field `ready`");
}

#[test]
fn a_dependency_check_under_liveness_is_refused_with_the_reason() {
    let toml_text = "[liveness.db]\ninterval = \"1s\"\npostgres = { url = \"postgres://x\" }\n";
    error_at(
        toml(toml_text),
        3,
        "a restart does not fix someone else's outage",
    );
    let yaml_text = "liveness:\n  db:\n    interval: 1s\n    postgres:\n      url: postgres://x\n";
    error_at(yaml(yaml_text), 4, "`postgres` is refused under liveness");
    error_at(
        yaml("liveness:\n  health:\n    app: {url: http://127.0.0.1:1/health}\n"),
        3,
        "use `app_liveness`",
    );
    error_at(
        toml("[liveness.pool]\nmetrics = { url = \"http://a/metrics\", preset = \"hikaricp\" }\n"),
        2,
        "liveness takes `event_loop_lag`",
    );
    error_at(
        toml("[liveness.loop]\ntier = \"hard\"\nevent_loop_lag = { url = \"http://a/m\" }\n"),
        2,
        "a readiness setting",
    );
    // And the other way round.
    error_at(
        yaml("readiness:\n  loop:\n    event_loop_lag: {url: http://a/m}\n"),
        3,
        "put it under [liveness]",
    );
}

#[test]
fn bad_values_are_reported_where_they_stand() {
    error_at(
        toml("[readiness.db]\ninterval = \"2 parsecs\"\npostgres = { url = \"postgres://x\" }\n"),
        2,
        "unknown unit",
    );
    error_at(
        yaml("readiness:\n  db:\n    tcp: {target: a:1}\n    tier: critical\n"),
        4,
        "critical",
    );
    error_at(
        yaml("readiness:\n  Db:\n    tcp: {target: a:1}\n"),
        2,
        "lowercase",
    );
    error_at(
        toml("[readiness.db]\ninterval = \"2s\"\n"),
        1,
        "needs a check kind",
    );
    error_at(
        toml("[readiness.a]\ntcp = { target = \"a:1\" }\nhttp = { url = \"http://b\" }\n"),
        3,
        "a check has one kind",
    );
    error_at(
        toml("[readiness.pool]\nmetrics = { url = \"http://a/m\", preset = \"c3p0\" }\n"),
        2,
        "unknown preset `c3p0`",
    );
    error_at(
        toml("[readiness.pool]\nmetrics = { url = \"http://a/m\", series = \"x\" }\n"),
        2,
        "needs `fail_if`",
    );
    error_at(
        toml(
            "[readiness.pool]\nmetrics = { url = \"http://a/m\", series = \"x\", fail_if = \"about 3\" }\n",
        ),
        2,
        "not a condition",
    );
    error_at(yaml("paths:\n  readiness: ready\n"), 2, "not a probe path");
    error_at(
        yaml("paths:\n  readiness: /metrics\n"),
        2,
        "served by the agent itself",
    );
    error_at(
        yaml("paths:\n  liveness: /x\n  readiness: /x\n"),
        3,
        "overlap",
    );
    error_at(
        yaml("readiness:\n  h:\n    app: {url: /health}\n"),
        2,
        "needs [app] url",
    );
}

#[test]
fn a_secret_comes_from_the_environment_and_a_missing_one_is_named() {
    error_at(
        toml("[readiness.db]\npostgres = { url = \"${PROBITY_AGENT_TEST_UNSET_URL}\" }\n"),
        2,
        "environment variable `PROBITY_AGENT_TEST_UNSET_URL` is not set",
    );
    let config =
        toml("[readiness.db]\npostgres = { url = \"postgres://u:${PATH}@h/db\" }\n").unwrap();
    let ReadinessKind::Postgres(settings) = &config.readiness.0[0].1.kind else {
        panic!("postgres");
    };
    assert!(settings.url.0.contains(&std::env::var("PATH").unwrap()));
    // The value never shows in a debug print.
    assert!(!format!("{:?}", settings.url).contains(&std::env::var("PATH").unwrap()));
}

#[test]
fn huge_and_binary_files_are_refused() {
    let error = Config::load(Path::new("/dev/zero.toml")).unwrap_err();
    assert!(matches!(error, ConfigError::Read { .. }), "{error}");
    let dir = std::env::temp_dir().join(format!("probity-agent-config-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let big = dir.join("big.toml");
    std::fs::write(&big, vec![b'#'; (MAX_FILE_BYTES + 10) as usize]).unwrap();
    assert!(matches!(
        Config::load(&big),
        Err(ConfigError::TooLarge { .. })
    ));
    let binary = dir.join("binary.yaml");
    std::fs::write(&binary, [0xff, 0xfe, 0x00]).unwrap();
    assert!(
        Config::load(&binary)
            .unwrap_err()
            .to_string()
            .contains("not UTF-8")
    );
    assert!(matches!(
        Config::load(&dir.join("agent.json")),
        Err(ConfigError::UnknownFormat { .. })
    ));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn values_that_cannot_be_meant_are_refused_with_their_key_and_line() {
    for (value, needle) in [
        ("1e308", "is not a percentage"),
        ("-5", "is not a percentage"),
    ] {
        error_at(
            toml(&format!(
                "[readiness.disk]\ndisk = {{ path = \"/\" }}\n\n[readiness.space]\ndisk = {{ path = \"/\", min_free_percent = {value} }}\n"
            )),
            5,
            needle,
        );
        error_at(
            yaml(&format!(
                "readiness:\n  space:\n    disk:\n      path: /\n      min_free_inodes_percent: {value}\n"
            )),
            5,
            needle,
        );
    }
    error_at(
        toml(
            "[readiness.names]\ndns = { host = \"db.internal\", min_addresses = 18446744073709551615 }\n",
        ),
        2,
        "min_addresses = 18446744073709551615: between 1 and 1000",
    );
    error_at(
        yaml("readiness:\n  names:\n    dns:\n      host: db.internal\n      min_addresses: 0\n"),
        5,
        "between 1 and 1000",
    );
    error_at(
        toml(
            "[readiness.errors]\nmetrics = { url = \"http://127.0.0.1:1/metrics\", series = \"x\", fail_if = \"> 0\", labels = { status = \"=~(5\" } }\n",
        ),
        2,
        "is not a regular expression",
    );
    error_at(
        toml("[requests]\nmax_error_share = 1.5\n"),
        2,
        "is not a share",
    );
}

#[test]
fn a_path_that_is_not_a_regular_file_is_refused_at_once() {
    let dir = std::env::temp_dir().join(format!("probity-agent-fifo-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let fifo = dir.join("agent.toml");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    // Opening a FIFO without a writer would block for ever; the refusal comes first.
    let error = Config::load(&fifo).expect_err("a FIFO is refused");
    assert!(
        error.to_string().contains("is a FIFO, not a regular file"),
        "{error}"
    );
    let missing = Config::load(&dir.join("absent.toml")).expect_err("a missing file is refused");
    assert!(missing.to_string().contains("cannot read"), "{missing}");
    let folder = dir.join("folder.toml");
    std::fs::create_dir_all(&folder).unwrap();
    let error = Config::load(&folder).expect_err("a directory is refused");
    assert!(error.to_string().contains("is a directory"), "{error}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_missing_series_is_a_choice_and_change_defaults_to_pass() {
    let config = toml(
        "[readiness.errors]\nmetrics = { url = \"http://127.0.0.1:1/metrics\", series = \"x_total\", fail_if = \"> 0\", change = true }\n\n[readiness.pool]\nmetrics = { url = \"http://127.0.0.1:1/metrics\", preset = \"hikaricp\" }\n\n[readiness.strict]\nmetrics = { url = \"http://127.0.0.1:1/metrics\", series = \"x_total\", fail_if = \"> 0\", change = true, missing = \"fail\" }\n",
    )
    .unwrap();
    let missing: Vec<Missing> = config
        .readiness
        .0
        .iter()
        .map(|(_, entry)| match &entry.kind {
            ReadinessKind::Metrics(metrics) => metrics.missing,
            _ => unreachable!(),
        })
        .collect();
    assert_eq!(missing, [Missing::Pass, Missing::Fail, Missing::Fail]);
}

#[test]
fn stale_after_scrapes_defaults_to_120_and_a_misspelling_is_still_refused() {
    let config = toml(
        "[app]\nurl = \"http://127.0.0.1:3000\"\n[readiness.pending]\nmetrics = { url = \"/metrics\", series = \"db_pool_pending_acquires\", fail_if = \"> 5\" }\n\
         [readiness.max]\nmetrics = { url = \"/metrics\", series = \"db_pool_max\", fail_if = \"< 1\", stale_after_scrapes = 0 }\n",
    )
    .unwrap();
    let settings: Vec<u32> = config
        .readiness
        .0
        .iter()
        .map(|(_, entry)| match &entry.kind {
            ReadinessKind::Metrics(metrics) => metrics.stale_after_scrapes,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(settings, vec![120, 0]);
    error_at(
        toml(
            "[app]\nurl = \"http://127.0.0.1:3000\"\n[readiness.pending]\nmetrics = { url = \"/metrics\", series = \"a\", fail_if = \"> 5\", stale_after_scrape = 10 }\n",
        ),
        4,
        "unknown field `stale_after_scrape`",
    );
    error_at(
        toml(
            "[app]\nurl = \"http://127.0.0.1:3000\"\n[readiness.pending]\nmetrics = { url = \"/metrics\", series = \"a\", fail_if = \"> 5\", stale_after_scrapes = 1 }\n",
        ),
        4,
        "write 2 or more, or 0 to never report",
    );
}

#[test]
fn a_name_the_core_reserves_is_refused_at_its_key_and_line() {
    // `deadlock` and `runtime_stall` are the core's own liveness conditions: the registry would
    // refuse them when built; the agent refuses them where they are written.
    for name in ["deadlock", "runtime_stall", "marked_broken", "readiness"] {
        let core = probity::validate_name(name).unwrap_err().to_string();
        let text = format!("service = \"a\"\n\n[readiness.{name}]\ntcp = {{ target = \"a:1\" }}\n");
        error_at(toml(&text), 3, &core);
        let text = format!(
            "readiness:\n  db:\n    tcp: {{target: a:1}}\n  {name}:\n    tcp: {{target: b:1}}\n"
        );
        error_at(yaml(&text), 4, &core);
    }
    let error = toml("[readiness.app_started]\ntcp = { target = \"a:1\" }\n").unwrap_err();
    assert_eq!(error.line(), Some(1), "{error}");
    assert!(
        error
            .to_string()
            .contains("reserved for the agent's own startup step"),
        "{error}"
    );
}
