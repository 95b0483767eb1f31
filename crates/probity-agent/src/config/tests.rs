use super::*;

fn toml(text: &str) -> Result<Config, ConfigError> {
    Config::parse(text, Format::Toml, Path::new("agent.toml"))
}

fn yaml(text: &str) -> Result<Config, ConfigError> {
    Config::parse(text, Format::Yaml, Path::new("agent.yaml"))
}

#[test]
fn experiment() {
    let cases_toml = [
        "service = \"a\"\nbogus = 1\n",
        "[readiness.db]\ntier = \"hard\"\nintervl = \"2s\"\npostgres = { url = \"postgres://x\" }\n",
        "[readiness.db]\npostgres = { url = \"postgres://x\", pool = 3 }\n",
        "[liveness.db]\ninterval = \"1s\"\npostgres = { url = \"postgres://x\" }\n",
        "[liveness.db]\ninterval = \"1s\"\n\n[liveness.db.postgres]\nurl = \"postgres://x\"\n",
        "[readiness.db]\ninterval = \"2 parsecs\"\npostgres = { url = \"postgres://x\" }\n",
        "[readiness.db]\ninterval = \"2s\"\n",
    ];
    for case in cases_toml {
        println!("TOML: {}", toml(case).unwrap_err());
    }
    let cases_yaml = [
        "service: a\nbogus: 1\n",
        "readiness:\n  db:\n    tier: hard\n    intervl: 2s\n    postgres: {url: postgres://x}\n",
        "readiness:\n  db:\n    postgres:\n      url: postgres://x\n      pool: 3\n",
        "liveness:\n  db:\n    interval: 1s\n    postgres:\n      url: postgres://x\n",
        "readiness:\n  db:\n    interval: 2 parsecs\n    postgres: {url: postgres://x}\n",
        "readiness:\n  db:\n    interval: 2s\n",
    ];
    for case in cases_yaml {
        println!("YAML: {}", yaml(case).unwrap_err());
    }
    panic!();
}
