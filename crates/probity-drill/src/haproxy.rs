//! A real HAProxy in front of the fleet: its configuration, its process and its view of the
//! servers.
//!
//! The configuration is the shipped one, `deploy/haproxy/haproxy.cfg` ([`SHIPPED_CONFIG`]),
//! with only the addresses changed (the frontend's and the stats listener's `bind`, the `server`
//! lines, the stats socket) and the check timing when the drill is given other timing
//! ([`config`]). So what the drill proves is what the deploy file does: its `httpchk GET
//! /readyz`, its `inter`/`rise`/`fall`, its retries of `503` on another server.
//!
//! The drill reads each server's state from the admin socket's `show stat`. A server is in
//! rotation while its status starts with `UP` (`UP 1/3` is up and going down; `DOWN 1/2` is down
//! and going up).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixStream;
use tokio::process::{Child, Command};

/// `deploy/haproxy/haproxy.cfg`, as shipped (read through the crate's `haproxy.cfg` link to it,
/// so the packaged crate carries the same file).
pub const SHIPPED_CONFIG: &str = include_str!("../haproxy.cfg");

/// The backend the shipped configuration routes to.
pub const BACKEND: &str = "checkout";

/// HAProxy's health-check timing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct CheckTiming {
    /// Interval while a server is fully up.
    #[serde(serialize_with = "crate::report::millis")]
    pub inter: Duration,
    /// Interval while a server is changing state.
    #[serde(serialize_with = "crate::report::millis")]
    pub fastinter: Duration,
    /// Interval while a server is fully down.
    #[serde(serialize_with = "crate::report::millis")]
    pub downinter: Duration,
    /// Consecutive successful checks to mark a server up.
    pub rise: u32,
    /// Consecutive failed checks to mark a server down.
    pub fall: u32,
    /// Longest a check may take.
    #[serde(serialize_with = "crate::report::millis")]
    pub timeout: Duration,
}

impl CheckTiming {
    /// The timing of the shipped configuration.
    pub fn shipped() -> Result<CheckTiming, HaproxyError> {
        timing_of(SHIPPED_CONFIG)
    }
}

impl Default for CheckTiming {
    /// The shipped configuration's timing ([`CheckTiming::shipped`]; its tests hold that it
    /// parses, so the fallback, HAProxy's own defaults, is never used).
    fn default() -> Self {
        CheckTiming::shipped().unwrap_or(CheckTiming {
            inter: Duration::from_secs(2),
            fastinter: Duration::from_secs(2),
            downinter: Duration::from_secs(2),
            rise: 2,
            fall: 3,
            timeout: Duration::from_secs(2),
        })
    }
}

/// Why HAProxy could not be run.
#[derive(Debug, thiserror::Error)]
pub enum HaproxyError {
    /// The binary is missing.
    #[error(
        "HAProxy not found at `{0}`: install it (Debian: `apt-get install haproxy`) or pass --haproxy PATH"
    )]
    Missing(String),
    /// The configuration to start from lacks something the drill needs to change.
    #[error("the HAProxy configuration has no {0}")]
    Template(&'static str),
    /// A time in the configuration is not one HAProxy would read.
    #[error("the HAProxy configuration has `{0}` where a time (e.g. 250ms, 1s) belongs")]
    Time(String),
    /// `haproxy -c` rejected the generated configuration.
    #[error("HAProxy rejected the generated configuration {path}: {message}")]
    Config {
        /// The configuration file.
        path: PathBuf,
        /// HAProxy's complaint.
        message: String,
    },
    /// Starting or talking to the process failed.
    #[error("HAProxy: {0}")]
    Io(#[from] std::io::Error),
}

/// Where the drill puts HAProxy, and whether it health-checks.
#[derive(Debug, Clone)]
pub struct Layout {
    /// The frontend's address (where load goes).
    pub frontend: SocketAddr,
    /// The stats page's address, or none to leave the `listen stats` section out.
    pub stats_page: Option<SocketAddr>,
    /// The admin socket.
    pub stats_socket: PathBuf,
    /// The servers, by name.
    pub servers: Vec<(String, SocketAddr)>,
    /// The check timing.
    pub timing: CheckTiming,
    /// `false` leaves out every health check (`option httpchk`, `http-check`, the `check`
    /// settings of `default-server`): HAProxy then takes every server as up. The drill measures
    /// what health checking costs with it.
    pub health_checks: bool,
}

/// HAProxy's time format: a number with `us`, `ms`, `s`, `m`, `h` or `d`; milliseconds without.
fn parse_time(text: &str) -> Result<Duration, HaproxyError> {
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: u64 = number
        .parse()
        .map_err(|_| HaproxyError::Time(text.to_owned()))?;
    let duration = match unit {
        "us" => Duration::from_micros(value),
        "" | "ms" => Duration::from_millis(value),
        "s" => Duration::from_secs(value),
        "m" => Duration::from_secs(value.saturating_mul(60)),
        "h" => Duration::from_secs(value.saturating_mul(3600)),
        "d" => Duration::from_secs(value.saturating_mul(86_400)),
        _ => return Err(HaproxyError::Time(text.to_owned())),
    };
    Ok(duration)
}

fn ms(duration: Duration) -> String {
    format!("{}ms", duration.as_millis().max(1))
}

/// `duration`, written as `written` is when that is the same time (so the shipped text stays).
fn time_as(written: &str, duration: Duration) -> String {
    match parse_time(written) {
        Ok(same) if same == duration => written.to_owned(),
        _ => ms(duration),
    }
}

/// The section a line belongs to (`global`, `defaults`, `frontend checkout`, …).
fn sections(text: &str) -> impl Iterator<Item = (&str, &str)> {
    let mut section = "";
    text.lines().map(move |line| {
        if !line.starts_with([' ', '\t', '#']) && !line.trim().is_empty() {
            section = line.trim();
        }
        (section, line)
    })
}

fn tokens(line: &str) -> Vec<&str> {
    line.split_whitespace().collect()
}

/// The check timing of a configuration: `default-server` in the backend, `timeout check`.
pub fn timing_of(text: &str) -> Result<CheckTiming, HaproxyError> {
    let backend = format!("backend {BACKEND}");
    let mut timing = None;
    let mut timeout = None;
    for (section, line) in sections(text) {
        let words = tokens(line);
        if section == backend && words.first() == Some(&"default-server") {
            let value = |key: &str| {
                words
                    .iter()
                    .position(|word| *word == key)
                    .and_then(|at| words.get(at + 1))
                    .copied()
            };
            let time = |key: &str, default: Duration| match value(key) {
                Some(text) => parse_time(text),
                None => Ok(default),
            };
            let count = |key: &str, default: u32| match value(key) {
                Some(text) => text
                    .parse()
                    .map_err(|_| HaproxyError::Time(text.to_owned())),
                None => Ok(default),
            };
            // HAProxy's defaults: inter 2s, fastinter and downinter follow inter, rise 2, fall 3.
            let inter = time("inter", Duration::from_secs(2))?;
            timing = Some(CheckTiming {
                inter,
                fastinter: time("fastinter", inter)?,
                downinter: time("downinter", inter)?,
                rise: count("rise", 2)?,
                fall: count("fall", 3)?,
                timeout: Duration::ZERO,
            });
        }
        if section == "defaults" && words.starts_with(&["timeout", "check"]) {
            timeout = words.get(2).map(|text| parse_time(text)).transpose()?;
        }
    }
    let mut timing = timing.ok_or(HaproxyError::Template(
        "`default-server` line in its backend",
    ))?;
    // Without `timeout check`, HAProxy bounds a check by `inter`.
    timing.timeout = timeout.unwrap_or(timing.inter);
    Ok(timing)
}

/// Words of `default-server` that configure health checks, with whether each takes a value.
const CHECK_SETTINGS: [(&str, bool); 9] = [
    ("check", false),
    ("inter", true),
    ("fastinter", true),
    ("downinter", true),
    ("rise", true),
    ("fall", true),
    ("observe", true),
    ("error-limit", true),
    ("on-error", true),
];

fn default_server(words: &[&str], layout: &Layout) -> Option<String> {
    let timing = layout.timing;
    let mut out = Vec::new();
    let mut index = 1;
    while index < words.len() {
        let word = words[index];
        let takes_value = CHECK_SETTINGS
            .iter()
            .find(|(name, _)| *name == word)
            .map(|(_, takes_value)| *takes_value);
        match takes_value {
            Some(takes_value) if !layout.health_checks => {
                index += if takes_value { 2 } else { 1 };
                continue;
            }
            Some(true) => {
                let shipped = words.get(index + 1).copied().unwrap_or_default();
                let value = match word {
                    "inter" => time_as(shipped, timing.inter),
                    "fastinter" => time_as(shipped, timing.fastinter),
                    "downinter" => time_as(shipped, timing.downinter),
                    "rise" => timing.rise.to_string(),
                    "fall" => timing.fall.to_string(),
                    _ => shipped.to_owned(),
                };
                out.push(word.to_owned());
                out.push(value);
                index += 2;
                continue;
            }
            _ => out.push(word.to_owned()),
        }
        index += 1;
    }
    if layout.health_checks {
        // Timing the configuration left to HAProxy's defaults is written out where it differs
        // from them (fastinter and downinter default to inter; rise to 2, fall to 3).
        for (key, value, default) in [
            ("inter", ms(timing.inter), ms(Duration::from_secs(2))),
            ("fastinter", ms(timing.fastinter), ms(timing.inter)),
            ("downinter", ms(timing.downinter), ms(timing.inter)),
            ("rise", timing.rise.to_string(), "2".to_owned()),
            ("fall", timing.fall.to_string(), "3".to_owned()),
        ] {
            if value != default && !out.iter().any(|word| word == key) {
                out.push(key.to_owned());
                out.push(value);
            }
        }
    }
    (!out.is_empty()).then(|| format!("    default-server {}", out.join(" ")))
}

/// `template` (the shipped configuration, or another with the same sections) with the drill's
/// addresses and timing: everything else is kept line for line.
pub fn config(template: &str, layout: &Layout) -> Result<String, HaproxyError> {
    let backend = format!("backend {BACKEND}");
    let mut out = Vec::new();
    let (mut socket, mut bind, mut servers, mut checks) = (false, false, false, false);
    let mut skip_section = None;
    for (section, line) in sections(template) {
        if skip_section == Some(section) {
            continue;
        }
        let words = tokens(line);
        let first = words.first().copied().unwrap_or_default();
        if section == "global" && words.starts_with(&["stats", "socket"]) {
            let rest = words.get(3..).unwrap_or_default().join(" ");
            out.push(format!(
                "    stats socket {} {rest}",
                layout.stats_socket.display()
            ));
            socket = true;
        } else if section == "defaults" && words.starts_with(&["timeout", "check"]) {
            let written = words.get(2).copied().unwrap_or_default();
            out.push(format!(
                "    timeout check {}",
                time_as(written, layout.timing.timeout)
            ));
        } else if section.starts_with("frontend ") && first == "bind" {
            out.push(format!("    bind {}", layout.frontend));
            bind = true;
        } else if section.starts_with("listen stats") && first == "bind" {
            match layout.stats_page {
                Some(address) => out.push(format!("    bind {address}")),
                None => {
                    // The section header is already written: take it back and skip the rest.
                    out.pop();
                    skip_section = Some(section);
                }
            }
        } else if section == backend && first == "server" {
            if !servers {
                for (name, address) in &layout.servers {
                    out.push(format!("    server {name} {address}"));
                }
                servers = true;
            }
        } else if section == backend && first == "default-server" {
            checks = true;
            if let Some(line) = default_server(&words, layout) {
                out.push(line);
            }
        } else if section == backend
            && !layout.health_checks
            && (words.starts_with(&["option", "httpchk"]) || first == "http-check")
        {
            // No health checks: HAProxy takes every server as up.
        } else {
            out.push(line.to_owned());
        }
    }
    for (found, what) in [
        (socket, "`stats socket` line in `global`"),
        (bind, "`bind` line in a frontend"),
        (servers, "`server` line in `backend checkout`"),
        (checks, "`default-server` line in `backend checkout`"),
    ] {
        if !found {
            return Err(HaproxyError::Template(what));
        }
    }
    let mut text = out.join("\n");
    text.push('\n');
    Ok(text)
}

/// One server's (or the backend's) figures from `show stat`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ServerStat {
    /// The server's name (`BACKEND` for the backend's row).
    pub name: String,
    /// `UP`, `DOWN`, `UP 1/3`, `no check`, ….
    pub status: String,
    /// Times HAProxy took it out of rotation (`chkdown`).
    pub check_downs: u64,
    /// Requests retried on it (`wretr`).
    pub retries: u64,
    /// Requests redispatched away from it to another server (`wredis`).
    pub redispatches: u64,
    /// Requests sent to it (`stot`).
    pub sessions: u64,
}

impl ServerStat {
    /// Whether the server takes traffic.
    pub fn in_rotation(&self) -> bool {
        in_rotation(&self.status)
    }
}

/// A running HAProxy.
#[derive(Debug)]
pub struct Haproxy {
    child: Child,
    stats_socket: PathBuf,
    /// The frontend address load goes to.
    pub frontend: SocketAddr,
    /// The stats page, if any.
    pub stats_page: Option<SocketAddr>,
}

impl Haproxy {
    /// Writes the shipped configuration with `layout` to `{work_dir}/{name}.cfg`, checks it with
    /// `haproxy -c`, then starts HAProxy in the foreground.
    pub async fn start(
        binary: &Path,
        work_dir: &Path,
        name: &str,
        layout: &Layout,
    ) -> Result<Haproxy, HaproxyError> {
        let version = Command::new(binary).arg("-v").output().await;
        if !matches!(version, Ok(output) if output.status.success()) {
            return Err(HaproxyError::Missing(binary.display().to_string()));
        }
        let config_path = work_dir.join(format!("{name}.cfg"));
        std::fs::write(&config_path, config(SHIPPED_CONFIG, layout)?)?;
        let check = Command::new(binary)
            .arg("-c")
            .arg("-q")
            .arg("-f")
            .arg(&config_path)
            .output()
            .await?;
        if !check.status.success() {
            return Err(HaproxyError::Config {
                path: config_path,
                message: String::from_utf8_lossy(&check.stderr).trim().to_owned(),
            });
        }
        let log = std::fs::File::create(work_dir.join(format!("{name}.log")))?;
        let child = crate::child::command(binary)
            .arg("-db")
            .arg("-f")
            .arg(&config_path)
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()?;
        Ok(Haproxy {
            child,
            stats_socket: layout.stats_socket.clone(),
            frontend: layout.frontend,
            stats_page: layout.stats_page,
        })
    }

    /// Each server's figures, then the backend's (named `BACKEND`).
    pub async fn stats(&self) -> std::io::Result<Vec<ServerStat>> {
        let mut socket = UnixStream::connect(&self.stats_socket).await?;
        socket.write_all(b"show stat\n").await?;
        let mut text = String::new();
        socket.read_to_string(&mut text).await?;
        Ok(parse_stat(&text, BACKEND))
    }

    /// Each server's status as HAProxy reports it (`UP`, `DOWN`, `UP 1/3`, …), by name.
    pub async fn server_states(&self) -> std::io::Result<Vec<(String, String)>> {
        Ok(self
            .stats()
            .await?
            .into_iter()
            .filter(|stat| stat.name != "BACKEND")
            .map(|stat| (stat.name, stat.status))
            .collect())
    }

    /// Whether the process is still running.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

/// Whether a `show stat` status means "in rotation".
pub fn in_rotation(status: &str) -> bool {
    status.starts_with("UP") || status == "no check"
}

/// Parses `show stat` CSV into the rows of one backend: its servers, then `BACKEND`.
pub fn parse_stat(text: &str, backend: &str) -> Vec<ServerStat> {
    let mut lines = text.lines();
    let Some(header) = lines.next() else {
        return Vec::new();
    };
    let columns: Vec<&str> = header.trim_start_matches("# ").split(',').collect();
    let position = |name: &str| columns.iter().position(|c| *c == name);
    let (Some(px), Some(sv), Some(status)) =
        (position("pxname"), position("svname"), position("status"))
    else {
        return Vec::new();
    };
    let counter = |fields: &[&str], name: &str| {
        position(name)
            .and_then(|at| fields.get(at))
            .and_then(|value| value.parse().ok())
            .unwrap_or(0)
    };
    lines
        .filter_map(|line| {
            let fields: Vec<&str> = line.split(',').collect();
            let (pxname, svname, state) = (fields.get(px)?, fields.get(sv)?, fields.get(status)?);
            (*pxname == backend && *svname != "FRONTEND").then(|| ServerStat {
                name: (*svname).to_owned(),
                status: (*state).to_owned(),
                check_downs: counter(&fields, "chkdown"),
                retries: counter(&fields, "wretr"),
                redispatches: counter(&fields, "wredis"),
                sessions: counter(&fields, "stot"),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(health_checks: bool) -> Layout {
        Layout {
            frontend: "127.0.0.1:9000".parse().unwrap(),
            stats_page: None,
            stats_socket: PathBuf::from("/tmp/x.sock"),
            servers: vec![
                ("checkout-1".into(), "127.0.0.1:9001".parse().unwrap()),
                ("checkout-2".into(), "127.0.0.1:9002".parse().unwrap()),
            ],
            timing: CheckTiming::shipped().unwrap(),
            health_checks,
        }
    }

    /// The configuration without its comments.
    fn directives(text: &str) -> String {
        text.lines()
            .filter(|line| !line.trim_start().starts_with('#'))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The lines the drill rewrites (addresses); every other line must be the shipped one.
    fn addresses(line: &str) -> bool {
        let words = tokens(line);
        matches!(words.first().copied(), Some("server" | "bind"))
            || words.starts_with(&["stats", "socket"])
    }

    #[test]
    fn the_drill_runs_the_shipped_configuration() {
        let text = config(SHIPPED_CONFIG, &layout(true)).unwrap();
        let kept = |text: &str| -> Vec<String> {
            sections(text)
                .filter(|(section, line)| !addresses(line) && *section != "listen stats")
                .map(|(_, line)| line.to_owned())
                .collect()
        };
        assert_eq!(kept(&text), kept(SHIPPED_CONFIG));
        assert!(text.contains("option httpchk GET /readyz"));
        assert!(text.contains("retry-on conn-failure 503"));
        assert!(text.contains(
            "    server checkout-1 127.0.0.1:9001\n    server checkout-2 127.0.0.1:9002\n"
        ));
        assert!(
            !directives(&text).contains("127.0.0.1:8080"),
            "the shipped servers are replaced"
        );
        assert!(text.contains("    stats socket /tmp/x.sock mode 600 level admin"));
        assert!(text.contains("    bind 127.0.0.1:9000"));
        assert!(
            !directives(&text).contains("listen stats"),
            "no stats page asked for"
        );
    }

    #[test]
    fn the_shipped_timing_is_the_default() {
        let timing = CheckTiming::shipped().unwrap();
        assert_eq!(
            timing,
            CheckTiming {
                inter: Duration::from_millis(250),
                fastinter: Duration::from_millis(250),
                downinter: Duration::from_millis(250),
                rise: 2,
                fall: 1,
                timeout: Duration::from_millis(500),
            }
        );
        assert_eq!(CheckTiming::default(), timing);
    }

    #[test]
    fn other_timing_and_no_health_checks() {
        let mut layout = layout(true);
        layout.timing.inter = Duration::from_millis(400);
        layout.timing.downinter = Duration::from_millis(100);
        layout.timing.fall = 2;
        layout.timing.timeout = Duration::from_millis(300);
        layout.stats_page = Some("127.0.0.1:9100".parse().unwrap());
        let text = config(SHIPPED_CONFIG, &layout).unwrap();
        assert!(
            text.contains(
                "default-server check inter 400ms rise 2 fall 2 fastinter 250ms downinter 100ms"
            ),
            "{text}"
        );
        assert!(text.contains("timeout check 300ms"));
        assert!(text.contains("listen stats\n    bind 127.0.0.1:9100\n"));
        assert_eq!(timing_of(&text).unwrap(), layout.timing);

        layout.health_checks = false;
        let text = directives(&config(SHIPPED_CONFIG, &layout).unwrap());
        assert!(!text.contains("default-server"), "{text}");
        assert!(!text.contains("httpchk"));
        assert!(!text.contains("http-check"));
        assert!(
            text.contains("retry-on conn-failure 503"),
            "the retries stay"
        );
    }

    #[test]
    fn templates_without_what_the_drill_changes_are_errors() {
        let error = config("global\n    maxconn 10\n", &layout(true)).unwrap_err();
        assert_eq!(
            error.to_string(),
            "the HAProxy configuration has no `stats socket` line in `global`"
        );
        let no_servers = SHIPPED_CONFIG
            .lines()
            .filter(|line| !line.trim_start().starts_with("server "))
            .collect::<Vec<_>>()
            .join("\n");
        let error = config(&no_servers, &layout(true)).unwrap_err();
        assert!(error.to_string().contains("`server` line"), "{error}");
        assert!(matches!(parse_time("fast"), Err(HaproxyError::Time(_))));
        assert!(matches!(parse_time("1x"), Err(HaproxyError::Time(_))));
        assert_eq!(parse_time("1500").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_time("2m").unwrap(), Duration::from_secs(120));
    }

    #[test]
    fn parses_show_stat() {
        let text = "# pxname,svname,qcur,qmax,scur,smax,slim,stot,bin,bout,dreq,dresp,ereq,econ,eresp,wretr,wredis,status,weight,act,bck,chkfail,chkdown\n\
checkout,FRONTEND,,,0,1,4096,3,0,0,0,0,0,,,,,OPEN,,,,,\n\
checkout,checkout-1,0,0,0,1,,3,0,0,,0,,0,0,4,2,UP,1,1,0,0,0\n\
checkout,checkout-2,0,0,0,1,,3,0,0,,0,,0,0,0,0,DOWN 1/2,1,1,0,3,2\n\
checkout,BACKEND,0,0,0,1,410,6,0,0,0,0,,0,0,4,2,UP,2,2,0,,1\n";
        let stats = parse_stat(text, "checkout");
        assert_eq!(stats.len(), 3);
        assert_eq!(
            stats[0],
            ServerStat {
                name: "checkout-1".into(),
                status: "UP".into(),
                check_downs: 0,
                retries: 4,
                redispatches: 2,
                sessions: 3,
            }
        );
        assert_eq!(stats[1].status, "DOWN 1/2");
        assert_eq!(stats[1].check_downs, 2);
        assert!(!stats[1].in_rotation());
        assert_eq!(stats[2].name, "BACKEND");
        assert!(in_rotation("UP 1/3"));
        assert!(in_rotation("no check"));
        assert!(!in_rotation("DOWN 1/2"));
        assert!(parse_stat("", "checkout").is_empty());
    }
}
