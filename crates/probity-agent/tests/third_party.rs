//! Open-source services nobody here wrote, installed from npm and PyPI by `scripts/subjects.sh`,
//! behind the agent with the example configurations `examples/agent/parse-server.toml` and
//! `examples/agent/mlflow.yaml`, against the real PostgreSQL through a forwarder: faults
//! injected from outside the service (the database refused, black-holed, a table locked, the
//! process frozen, load at 32 times the pool), and what the service's own health endpoint and
//! the agent said, sampled every 500 ms.
//!
//! - Parse Server 9.10.0 (Node, a pg-promise pool of 4): `/parse/health` answers 200 once the
//!   server has started and checks nothing after that.
//! - The MLflow tracking server 3.17.2 (Python, a SQLAlchemy pool of 2 + 1 overflow) on
//!   waitress with 8 threads: `/health` returns "OK" and checks nothing, but it needs a free
//!   thread like any request, so when every thread waits on the database it answers nothing.
//!
//! Each test prints its table (and writes it to `$CARGO_TARGET_TMPDIR/third-party-NAME.md`).

mod subjects;
mod support;

use probity_agent::Format;
use std::process::Command;
use std::time::Duration;
use subjects::{
    Forwarder, Link, Outcomes, Request, Row, Sampler, Service, TableLock, free_port, load,
    summarize,
};
use tokio::time::Instant;

/// One fault, as injected from outside the service.
#[derive(Clone, Copy, Debug)]
enum Fault {
    /// The database's listener closed and every open connection reset.
    Refused,
    /// Connections to the database accepted and never answered.
    BlackHoled,
    /// `ACCESS EXCLUSIVE` on the table every request reads.
    TableLocked,
    /// `SIGSTOP` to the service's process group.
    Stopped,
    /// No fault: concurrency at this many times the pool.
    Busy(usize),
    /// No fault, as many clients as the pool has connections: the baseline, and a warm-up
    /// (MLflow creates its database engine on the first tracking request).
    Baseline,
}

impl Fault {
    fn name(self, seconds: u64) -> String {
        match self {
            Fault::Refused => format!("database refused, {seconds} s"),
            Fault::BlackHoled => format!("database black-holed, {seconds} s"),
            Fault::TableLocked => format!("table locked, {seconds} s"),
            Fault::Stopped => format!("SIGSTOP, {seconds} s"),
            Fault::Busy(times) => format!("busy: {times}× the pool, {seconds} s"),
            Fault::Baseline => format!("no fault, pool-size clients, {seconds} s"),
        }
    }
}

/// A service behind the agent, its database path through a forwarder.
struct Subject {
    service: Service,
    forwarder: Forwarder,
    database: String,
    table: &'static str,
    agent: support::RunningAgent,
    /// The service's own health endpoint.
    health: String,
    mix: Vec<Request>,
    pool: usize,
}

impl Subject {
    async fn agent_ready(&self, limit: Duration) -> bool {
        subjects::wait_healthy(&format!("{}/readyz", self.agent.url), limit).await
    }

    /// Injects `fault` for `duration` under traffic from `concurrency` clients; the row says
    /// what the service and the agent said meanwhile, and how long the agent took to be ready
    /// again after it ended.
    async fn run(
        &self,
        sampler: &Sampler,
        fault: Fault,
        duration: Duration,
        concurrency: usize,
    ) -> Row {
        assert!(
            self.agent_ready(Duration::from_secs(120)).await,
            "{}: the agent is not ready before {fault:?}:\n{}",
            self.service.name,
            self.service.log_tail()
        );
        let mut lock = None;
        let from = sampler.now();
        match fault {
            Fault::Refused => self.forwarder.set(Link::Refused).await,
            Fault::BlackHoled => self.forwarder.set(Link::BlackHoled).await,
            Fault::TableLocked => {
                lock = Some(TableLock::take(&self.database, self.table));
                let held = support::eventually(Duration::from_secs(10), || async {
                    TableLock::held(&self.database, self.table).then_some(())
                })
                .await;
                assert!(held.is_some(), "the lock on {} was not granted", self.table);
            }
            Fault::Stopped => self.service.stop(),
            Fault::Busy(_) | Fault::Baseline => {}
        }
        let requests: Outcomes = load(
            &self.service.url(),
            &self.mix,
            concurrency,
            Duration::from_secs(5),
            duration,
        )
        .await;
        let to = sampler.now();
        match fault {
            Fault::Refused | Fault::BlackHoled => self.forwarder.set(Link::Open).await,
            Fault::TableLocked => drop(lock.take()),
            Fault::Stopped => self.service.resume(),
            Fault::Busy(_) | Fault::Baseline => {}
        }
        let ended = Instant::now();
        let ready_again = self
            .agent_ready(Duration::from_secs(120))
            .await
            .then(|| ended.elapsed().as_secs_f64());
        Row {
            fault: fault.name(duration.as_secs()),
            summary: summarize(&sampler.window(from, to), from),
            requests,
            ready_again,
        }
    }
}

impl Drop for Subject {
    fn drop(&mut self) {
        let _ = Command::new("psql")
            .args(["-h", "127.0.0.1", "-U", "postgres", "-d", "postgres", "-qc"])
            .arg(format!(
                "drop database if exists {} with (force)",
                self.database
            ))
            .output();
    }
}

const PARSE_APP_ID: &str = "probity";
const PARSE_MASTER_KEY: &str = "probity-master-key";

async fn parse_server() -> Option<Subject> {
    if !support::postgres_available() {
        return None;
    }
    let dir = subjects::installed("parse-server-9.10.0")?;
    let database = subjects::create_database("probity_parse");
    let forwarder = Forwarder::start(support::POSTGRES).await;
    let port = free_port();
    // Parse Server writes its logs under ./logs: a scratch directory, not the repository.
    let scratch = std::env::temp_dir().join(format!("probity-parse-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).unwrap();
    let mut command = Command::new("node");
    command
        .current_dir(&scratch)
        .arg(dir.join("node_modules/parse-server/bin/parse-server"))
        .args(["--appId", PARSE_APP_ID, "--masterKey", PARSE_MASTER_KEY])
        .args(["--host", "127.0.0.1", "--port", &port.to_string()])
        .arg("--databaseURI")
        .arg(format!(
            "postgres://postgres@{}/{database}?max=4",
            forwarder.host_port()
        ))
        .arg("--serverURL")
        .arg(format!("http://127.0.0.1:{port}/parse"));
    let service = Service::spawn("parse-server", port, command);
    let health = format!("{}/parse/health", service.url());
    assert!(
        subjects::wait_healthy(&health, Duration::from_secs(120)).await,
        "Parse Server never became healthy:\n{}",
        service.log_tail()
    );
    // The class the traffic reads and writes, created once with the master key.
    let created = support::client()
        .post(format!("{}/parse/classes/Order", service.url()))
        .header("X-Parse-Application-Id", PARSE_APP_ID)
        .header("X-Parse-Master-Key", PARSE_MASTER_KEY)
        .header("content-type", "application/json")
        .body(r#"{"item":"first","quantity":1}"#)
        .send()
        .await
        .map(|response| response.status().as_u16());
    assert_eq!(created.ok(), Some(201), "{}", service.log_tail());

    let config = std::fs::read_to_string(subjects::example_path("parse-server.toml"))
        .unwrap()
        .replace("http://127.0.0.1:1337", &service.url())
        .replace(
            "127.0.0.1:5432/parse",
            &format!("{}/{database}", forwarder.host_port()),
        );
    let agent = support::agent(&config, Format::Toml).await;
    let mix = vec![
        Request::get("/parse/classes/Order?limit=5").header("X-Parse-Application-Id", PARSE_APP_ID),
        Request::post("/parse/classes/Order", r#"{"item":"{n}","quantity":2}"#)
            .header("X-Parse-Application-Id", PARSE_APP_ID),
    ];
    Some(Subject {
        service,
        forwarder,
        database,
        table: "\"Order\"",
        agent,
        health,
        mix,
        pool: 4,
    })
}

async fn mlflow() -> Option<Subject> {
    if !support::postgres_available() {
        return None;
    }
    let dir = subjects::installed("mlflow-3.17.2")?;
    let database = subjects::create_database("probity_mlflow");
    let forwarder = Forwarder::start(support::POSTGRES).await;
    let port = free_port();
    let scratch = std::env::temp_dir().join(format!("probity-mlflow-{}", std::process::id()));
    std::fs::create_dir_all(scratch.join("artifacts")).unwrap();
    std::fs::create_dir_all(scratch.join("metrics")).unwrap();
    let mut command = Command::new(dir.join("bin/mlflow"));
    command
        .arg("server")
        .arg("--backend-store-uri")
        .arg(format!(
            "postgresql://postgres@{}/{database}",
            forwarder.host_port()
        ))
        .arg("--default-artifact-root")
        .arg(scratch.join("artifacts"))
        .arg("--expose-prometheus")
        .arg(scratch.join("metrics"))
        .args(["--host", "127.0.0.1", "--port", &port.to_string()])
        .args(["--waitress-opts", "--threads=8"])
        .env("MLFLOW_SQLALCHEMYSTORE_POOL_SIZE", "2")
        .env("MLFLOW_SQLALCHEMYSTORE_MAX_OVERFLOW", "1")
        .env("MLFLOW_SERVER_ENABLE_JOB_EXECUTION", "false");
    let service = Service::spawn("mlflow", port, command);
    let health = format!("{}/health", service.url());
    // MLflow imports for tens of seconds (more on a loaded machine) and migrates the schema.
    assert!(
        subjects::wait_healthy(&health, Duration::from_secs(300)).await,
        "MLflow never became healthy:\n{}",
        service.log_tail()
    );
    let config = std::fs::read_to_string(subjects::example_path("mlflow.yaml"))
        .unwrap()
        .replace("http://127.0.0.1:5000", &service.url())
        .replace(
            "127.0.0.1:5432/mlflow",
            &format!("{}/{database}", forwarder.host_port()),
        );
    let agent = support::agent(&config, Format::Yaml).await;
    let mix = vec![
        Request::get("/api/2.0/mlflow/experiments/search?max_results=5"),
        Request::post(
            "/api/2.0/mlflow/runs/create",
            r#"{"experiment_id":"0","run_name":"{n}"}"#,
        ),
    ];
    Some(Subject {
        service,
        forwarder,
        database,
        table: "experiments",
        agent,
        health,
        mix,
        pool: 3,
    })
}

/// Runs every fault in turn and returns the rows.
async fn each_fault(subject: &Subject) -> Vec<(Fault, Row)> {
    let sampler = Sampler::start(subject.health.clone(), subject.agent.url.clone());
    // Database faults under traffic at four times the pool (16 clients for Parse Server;
    // for MLflow, enough to hold all 8 threads), the freeze under light traffic.
    let traffic = 16;
    let plan = [
        (Fault::Baseline, 10, subject.pool),
        (Fault::Refused, 20, traffic),
        (Fault::BlackHoled, 30, traffic),
        (Fault::TableLocked, 30, traffic),
        (Fault::Stopped, 15, 2),
        (Fault::Busy(32), 30, 32 * subject.pool),
    ];
    let mut rows = Vec::new();
    for (fault, seconds, concurrency) in plan {
        let row = subject
            .run(&sampler, fault, Duration::from_secs(seconds), concurrency)
            .await;
        eprintln!("{}", row.markdown());
        rows.push((fault, row));
    }
    rows
}

fn report(name: &str, rows: &[(Fault, Row)]) {
    let mut table = format!("{}\n", subjects::TABLE_HEAD);
    for (_, row) in rows {
        table.push_str(&row.markdown());
        table.push('\n');
    }
    eprintln!("{name}\n{table}");
    let _ = std::fs::write(
        std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("third-party-{name}.md")),
        &table,
    );
}

fn row(rows: &[(Fault, Row)], wanted: fn(Fault) -> bool) -> &Row {
    &rows.iter().find(|(fault, _)| wanted(*fault)).unwrap().1
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parse_server_behind_the_agent_under_each_fault() {
    let Some(subject) = parse_server().await else {
        return;
    };
    let rows = each_fault(&subject).await;
    report("parse-server", &rows);

    // Parse Server's own health checks nothing: it said 200 through every database fault.
    for wanted in [
        (|f| matches!(f, Fault::Refused)) as fn(Fault) -> bool,
        |f| matches!(f, Fault::BlackHoled),
        |f| matches!(f, Fault::TableLocked),
    ] {
        let row = row(&rows, wanted);
        assert_eq!(row.summary.service_failed, 0, "{}", row.markdown());
        // An event loop never waits on the database: the agent's liveness held.
        assert_eq!(row.summary.livez_failed, 0, "{}", row.markdown());
        assert!(row.ready_again.is_some(), "{}", row.markdown());
    }
    // The agent's own connection sees the database refused or hung: out of rotation, naming it.
    for wanted in [
        (|f| matches!(f, Fault::Refused)) as fn(Fault) -> bool,
        |f| matches!(f, Fault::BlackHoled),
    ] {
        let row = row(&rows, wanted);
        assert!(row.requests.failed() > 0, "{}", row.markdown());
        assert!(
            row.summary.failing_checks.iter().any(|check| check == "db"),
            "{}",
            row.markdown()
        );
    }
    // A lock on the table the requests need: requests wait, Parse Server's health says ok and
    // it exports no request metrics — the agent sees it because its `db` check reads that table
    // (a `SELECT 1` answered through the whole lock): out of rotation, naming it.
    let locked = row(&rows, |f| matches!(f, Fault::TableLocked));
    assert!(locked.requests.timeouts > 0, "{}", locked.markdown());
    assert!(locked.summary.readyz_failed > 0, "{}", locked.markdown());
    assert!(
        locked
            .summary
            .failing_checks
            .iter()
            .any(|check| check == "db"),
        "{}",
        locked.markdown()
    );
    // Frozen: no answer from the service, the agent's liveness failed.
    let stopped = row(&rows, |f| matches!(f, Fault::Stopped));
    assert!(stopped.summary.service_silent > 0, "{}", stopped.markdown());
    assert!(stopped.summary.livez_failed > 0, "{}", stopped.markdown());
    // Busy, not broken: at 32× the pool requests succeed (on a loaded 2-core machine many
    // also wait past the clients' 5 s) and Parse Server's health answers, at times more slowly
    // than the agent's 1 s timeout: what the agent's liveness made of it is in the table.
    let busy = row(&rows, |f| matches!(f, Fault::Busy(_)));
    assert!(busy.requests.ok > 0, "{}", busy.markdown());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mlflow_behind_the_agent_under_each_fault() {
    let Some(subject) = mlflow().await else {
        return;
    };
    let rows = each_fault(&subject).await;
    report("mlflow", &rows);

    // Refused and black-holed: the agent's own connection names the database.
    for wanted in [
        (|f| matches!(f, Fault::Refused)) as fn(Fault) -> bool,
        |f| matches!(f, Fault::BlackHoled),
    ] {
        let row = row(&rows, wanted);
        assert!(row.requests.failed() > 0, "{}", row.markdown());
        assert!(
            row.summary.failing_checks.iter().any(|check| check == "db"),
            "{}",
            row.markdown()
        );
        assert!(row.ready_again.is_some(), "{}", row.markdown());
    }
    // With every thread waiting on a black-holed database or a locked table, MLflow's own
    // /health stops answering: nothing outside the process can tell that from a wedge.
    for wanted in [
        (|f| matches!(f, Fault::BlackHoled)) as fn(Fault) -> bool,
        |f| matches!(f, Fault::TableLocked),
    ] {
        let row = row(&rows, wanted);
        assert!(row.summary.service_silent > 0, "{}", row.markdown());
    }
    // Frozen: the agent's liveness failed.
    let stopped = row(&rows, |f| matches!(f, Fault::Stopped));
    assert!(stopped.summary.service_silent > 0, "{}", stopped.markdown());
    assert!(stopped.summary.livez_failed > 0, "{}", stopped.markdown());
    let busy = row(&rows, |f| matches!(f, Fault::Busy(_)));
    assert!(busy.requests.ok > 0, "{}", busy.markdown());
}

/// The agent configurations of the drill files (examples/drills), with the drill's placeholders
/// filled as it fills them per instance, are valid agent configurations.
#[tokio::test]
async fn the_drill_files_agent_configurations_are_valid() {
    for (name, format) in [
        ("parse-server.agent.toml", Format::Toml),
        ("mlflow.agent.yaml", Format::Yaml),
    ] {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../examples/drills")
            .join(name);
        let text = std::fs::read_to_string(&path)
            .unwrap()
            .replace("{agent.port}", "9090")
            .replace("{port}", "3000")
            .replace("{dep.db.url}", "postgres://postgres@127.0.0.1:5432/test");
        for placeholder in ["{port", "{agent.", "{dep."] {
            assert!(!text.contains(placeholder), "{name}: {placeholder}… left");
        }
        let config = probity_agent::Config::parse(&text, format, &path)
            .unwrap_or_else(|error| panic!("{name}: {error}"));
        probity_agent::Agent::build(&config).unwrap_or_else(|error| panic!("{name}: {error}"));
    }
}
