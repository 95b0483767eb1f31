//! The admin listener's status page in a real browser: headless Chromium, driven over
//! WebDriver (`chromedriver`), watches `/status` while the pool leaks, and the page — left
//! open, not reloaded — moves `db` to the top, red, with its fall listed, and back among the
//! passing rows once the connections are given back.
//!
//! Needs Debian's `chromium` and `chromium-driver` (`scripts/setup.sh` installs them). Without
//! them the test fails under `CI=true` and otherwise skips, saying so.

mod support;

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use support::{Checkout, TempDir, free_address, in_ci, post, wait_ready};

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

/// Whether both browser binaries are here; under CI their absence is a failure.
fn require_browser() -> bool {
    let missing: Vec<&str> = [CHROMIUM, CHROMEDRIVER]
        .into_iter()
        .filter(|path| !Path::new(path).exists())
        .collect();
    if missing.is_empty() {
        return true;
    }
    let message = format!(
        "{} not found: install Debian's chromium and chromium-driver (scripts/setup.sh)",
        missing.join(" and ")
    );
    assert!(!in_ci(), "{message}");
    eprintln!("\n!!! SKIPPED: the status page browser test did not run: {message} !!!\n");
    false
}

/// A running `chromedriver`; killed when dropped.
struct Driver {
    child: Child,
    base: String,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Driver {
    async fn start() -> Driver {
        let address = free_address();
        let child = Command::new(CHROMEDRIVER)
            .arg(format!("--port={}", address.port()))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn chromedriver");
        let driver = Driver {
            child,
            base: format!("http://{address}"),
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok(status) = driver.call("GET", "/status", None).await
                && status["value"]["ready"] == true
            {
                return driver;
            }
            assert!(Instant::now() < deadline, "chromedriver did not get ready");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    async fn call(&self, method: &str, path: &str, body: Option<Value>) -> Result<Value, String> {
        // Starting a browser on a loaded machine can take a while.
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(90))
            .build()
            .map_err(|error| error.to_string())?;
        let url = format!("{}{path}", self.base);
        let request = match method {
            "GET" => client.get(&url),
            "DELETE" => client.delete(&url),
            _ => client.post(&url).json(&body.unwrap_or_else(|| json!({}))),
        };
        let response = request.send().await.map_err(|error| error.to_string())?;
        let status = response.status();
        let value: Value = response.json().await.map_err(|error| error.to_string())?;
        if status.is_success() {
            Ok(value)
        } else {
            Err(format!("{method} {path}: {status}: {value}"))
        }
    }
}

/// One headless Chromium window.
struct Browser<'a> {
    driver: &'a Driver,
    session: String,
    _profile: TempDir,
}

impl<'a> Browser<'a> {
    async fn open(driver: &'a Driver) -> Browser<'a> {
        let profile = TempDir::new("chromium-profile");
        let capabilities = json!({
            "capabilities": { "alwaysMatch": {
                "browserName": "chrome",
                "goog:chromeOptions": {
                    "binary": CHROMIUM,
                    "args": [
                        "--headless", "--no-sandbox", "--disable-gpu",
                        "--disable-background-networking", "--disable-component-update",
                        "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
                        "--window-size=1400,1000",
                        format!("--user-data-dir={}", profile.path().display()),
                    ],
                },
            }},
        });
        let created = driver
            .call("POST", "/session", Some(capabilities))
            .await
            .unwrap_or_else(|error| panic!("start headless Chromium: {error}"));
        let session = created["value"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session id in {created}"))
            .to_owned();
        Browser {
            driver,
            session,
            _profile: profile,
        }
    }

    async fn call(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let path = format!("/session/{}{path}", self.session);
        self.driver
            .call(method, &path, body)
            .await
            .unwrap_or_else(|error| panic!("{error}"))
    }

    async fn navigate(&self, url: &str) {
        self.call("POST", "/url", Some(json!({ "url": url }))).await;
    }

    /// What the page shows now, read from its DOM.
    async fn page(&self) -> Page {
        let script = r#"
            const rows = Array.from(document.querySelectorAll('tr.row')).map(row => ({
                name: row.dataset.name,
                severity: row.dataset.severity,
                state: (row.querySelector('.state') || {}).textContent || '',
                reason: (row.querySelector('.reason') || {}).textContent || '',
                transitions: Array.from(row.querySelectorAll('ol.transitions li'))
                    .map(li => li.textContent),
            }));
            return { updates: Number(document.body.dataset.updates || 0), rows: rows };
        "#;
        let value = self
            .call(
                "POST",
                "/execute/sync",
                Some(json!({ "script": script, "args": [] })),
            )
            .await;
        serde_json::from_value(value["value"].clone())
            .unwrap_or_else(|error| panic!("page state {value}: {error}"))
    }

    async fn screenshot(&self, path: &Path) {
        let value = self.call("GET", "/screenshot", None).await;
        let png = decode_base64(value["value"].as_str().expect("a base64 screenshot"));
        std::fs::write(path, png).expect("write the screenshot");
    }

    async fn close(self) {
        let _ = self
            .driver
            .call("DELETE", &format!("/session/{}", self.session), None)
            .await;
    }
}

#[derive(Debug, serde::Deserialize)]
struct Page {
    updates: u64,
    rows: Vec<Row>,
}

#[derive(Debug, serde::Deserialize)]
struct Row {
    name: String,
    severity: String,
    state: String,
    reason: String,
    transitions: Vec<String>,
}

impl Page {
    fn row(&self, name: &str) -> Option<&Row> {
        self.rows.iter().find(|row| row.name == name)
    }
}

/// Polls the open page until `done` holds, every 250 ms, or panics after `timeout` with the
/// last state seen.
async fn wait_for(
    browser: &Browser<'_>,
    timeout: Duration,
    what: &str,
    done: impl Fn(&Page) -> bool,
) -> Page {
    let deadline = Instant::now() + timeout;
    loop {
        let page = browser.page().await;
        if done(&page) {
            return page;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {timeout:?} waiting for {what}; the page shows {page:#?}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

fn decode_base64(text: &str) -> Vec<u8> {
    let value = |byte: u8| match byte {
        b'A'..=b'Z' => byte - b'A',
        b'a'..=b'z' => byte - b'a' + 26,
        b'0'..=b'9' => byte - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => panic!("not base64: {byte}"),
    };
    let digits: Vec<u8> = text
        .bytes()
        .filter(|byte| !byte.is_ascii_whitespace() && *byte != b'=')
        .map(value)
        .collect();
    let mut bytes = Vec::with_capacity(digits.len() * 3 / 4);
    for chunk in digits.chunks(4) {
        let word = chunk.iter().enumerate().fold(0u32, |word, (index, digit)| {
            word | (u32::from(*digit) << (18 - 6 * index))
        });
        bytes.extend_from_slice(&word.to_be_bytes()[1..chunk.len()]);
    }
    bytes
}

fn artefact(name: &str) -> PathBuf {
    let directory = Path::new(env!("CARGO_TARGET_TMPDIR")).join("status-page");
    std::fs::create_dir_all(&directory).expect("create the artefact directory");
    directory.join(name)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_open_status_page_puts_a_leaking_db_first_with_its_fall_listed() {
    if !require_browser() {
        return;
    }
    let checkout = Checkout::start(&["--chaos"]);
    wait_ready(&checkout).await;
    let driver = Driver::start().await;
    let browser = Browser::open(&driver).await;
    browser.navigate(&checkout.admin_url("/status")).await;

    // Healthy: db passes and is not first (registration order puts the startup steps ahead
    // of it), and the page has refreshed itself at least once.
    let before = wait_for(
        &browser,
        Duration::from_secs(30),
        "a healthy page that refreshed itself",
        |page| {
            page.updates >= 1
                && page
                    .row("db")
                    .is_some_and(|db| db.severity == "passing" && db.state == "healthy")
        },
    )
    .await;
    assert_ne!(before.rows[0].name, "db", "{before:#?}");
    assert!(
        before.rows.iter().all(|row| row.severity == "passing"),
        "{before:#?}"
    );
    let db = before.row("db").unwrap();
    assert!(
        db.transitions
            .iter()
            .all(|transition| !transition.contains("healthy → unhealthy")),
        "{before:#?}"
    );
    browser.screenshot(&artefact("before-leak.png")).await;

    let leaked = post(&checkout.admin_url("/chaos/leak-connections"), None).await;
    assert_eq!(leaked.status, 200, "{}", leaked.body);

    // The same page, not reloaded: its script brings the failure in.
    let after = wait_for(
        &browser,
        Duration::from_secs(45),
        "db first, failing, with its fall listed",
        |page| {
            page.updates > before.updates
                && page.rows.first().is_some_and(|db| {
                    db.name == "db"
                        && db.severity == "failing"
                        && db
                            .transitions
                            .first()
                            .is_some_and(|newest| newest.contains("healthy → unhealthy"))
                })
        },
    )
    .await;
    let db = &after.rows[0];
    assert!(
        db.transitions[0].contains("(exhausted)"),
        "the fall names its class: {after:#?}"
    );
    assert!(
        db.reason.contains("in use"),
        "the admin page gives the pool's own words: {after:#?}"
    );
    assert!(
        after.rows[1..].iter().all(|row| row.severity != "failing"),
        "only db fails: {after:#?}"
    );
    let screenshot = artefact("pool-leak.png");
    browser.screenshot(&screenshot).await;
    let png = std::fs::read(&screenshot).unwrap();
    assert!(png.starts_with(b"\x89PNG"), "a PNG screenshot");
    eprintln!(
        "status page during the pool leak: {} (before: {})",
        screenshot.display(),
        artefact("before-leak.png").display()
    );

    // Given back: db rises after three good polls and drops back among the passing rows,
    // its rise listed newest.
    let released = post(&checkout.admin_url("/chaos/release-connections"), None).await;
    assert_eq!(released.status, 200, "{}", released.body);
    let recovered = wait_for(
        &browser,
        Duration::from_secs(45),
        "db healthy again with its rise listed",
        |page| {
            page.row("db").is_some_and(|db| {
                db.severity == "passing"
                    && db
                        .transitions
                        .first()
                        .is_some_and(|newest| newest.contains("unhealthy → healthy"))
            })
        },
    )
    .await;
    assert!(
        recovered.rows.iter().all(|row| row.severity == "passing"),
        "{recovered:#?}"
    );
    browser.close().await;
}
