//! The HTML chart, opened in headless Chromium: the screenshot must show the error-rate curve
//! where the incident is and each instance's lane in the right colours.
//!
//! Needs the Debian package `chromium`. Under CI (`CI=true`) a missing browser fails the test;
//! elsewhere the test is skipped with a message.

use probity_sim::chart::{
    self, CURVE_COLOUR, LANE_HEIGHT, LEFT, PLOT_HEIGHT, TOP, WIDTH, lane_colour,
};
use probity_sim::report::{LaneState, Report};
use probity_sim::{Scenario, effective_seed, simulate};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

fn find_chromium() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    for dir in std::env::split_paths(&path) {
        for name in ["chromium", "chromium-browser", "google-chrome"] {
            let candidate = dir.join(name);
            if candidate.is_file() {
                return Some(candidate);
            }
        }
    }
    None
}

fn hex(colour: &str) -> [u8; 3] {
    let value = u32::from_str_radix(colour.trim_start_matches('#'), 16).unwrap();
    [(value >> 16) as u8, (value >> 8) as u8, value as u8]
}

struct Image {
    width: usize,
    height: usize,
    rgb: Vec<[u8; 3]>,
}

impl Image {
    fn load(path: &Path) -> Image {
        let decoder =
            png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path).unwrap()));
        let mut reader = decoder.read_info().unwrap();
        let mut buffer = vec![0; reader.output_buffer_size().unwrap()];
        let info = reader.next_frame(&mut buffer).unwrap();
        let channels = info.color_type.samples();
        let (width, height) = (info.width as usize, info.height as usize);
        let rgb = buffer[..info.buffer_size()]
            .chunks(channels)
            .map(|px| [px[0], px[1], px[2]])
            .collect();
        Image { width, height, rgb }
    }

    fn is(&self, x: usize, y: usize, colour: [u8; 3]) -> bool {
        if x >= self.width || y >= self.height {
            return false;
        }
        let px = self.rgb[y * self.width + x];
        px.iter()
            .zip(colour)
            .all(|(a, b)| (*a as i32 - b as i32).abs() <= 24)
    }

    fn count_in(
        &self,
        xs: std::ops::Range<usize>,
        ys: std::ops::Range<usize>,
        colour: [u8; 3],
    ) -> usize {
        let mut count = 0;
        for y in ys {
            for x in xs.clone() {
                if self.is(x, y, colour) {
                    count += 1;
                }
            }
        }
        count
    }
}

fn screenshot(chromium: &Path, html: &Path, png: &Path, height: u32) {
    let profile = std::env::temp_dir().join(format!("probity-chromium-{}", std::process::id()));
    std::fs::create_dir_all(&profile).unwrap();
    let mut child = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--hide-scrollbars",
            "--force-device-scale-factor=1",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--window-size={WIDTH},{height}"))
        .arg(format!("--screenshot={}", png.display()))
        .arg(format!("file://{}", html.display()))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start chromium");
    // The wait runs on a thread of its own; this one waits for its answer up to a deadline.
    let pid = child.id();
    let (done, exited) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(child.wait());
    });
    match exited.recv_timeout(Duration::from_secs(90)) {
        Ok(status) => {
            let status = status.expect("wait for chromium");
            assert!(status.success(), "chromium exited with {status}");
        }
        Err(_) => {
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
            panic!("chromium did not finish within 90 s");
        }
    }
    std::fs::remove_dir_all(&profile).ok();
}

fn report() -> Report {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios/db-in-liveness-before.yaml");
    let scenario = Scenario::load(&path).unwrap();
    simulate(&scenario, effective_seed(&scenario, None))
}

#[test]
fn html_chart_renders_curve_and_lanes_in_chromium() {
    let Some(chromium) = find_chromium() else {
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("chromium is not installed: `apt-get install -y chromium` (required in CI)");
        }
        eprintln!(
            "!!! SKIPPED: chromium is not installed (apt-get install -y chromium); the chart was not checked in a browser"
        );
        return;
    };
    let report = report();
    let dir = std::env::temp_dir().join(format!("probity-chart-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let html = dir.join("chart.html");
    let png = dir.join("chart.png");
    std::fs::write(&html, chart::html(std::slice::from_ref(&report))).unwrap();
    let height = chart::chart_height(&report);
    screenshot(&chromium, &html, &png, height);
    let image = Image::load(&png);
    assert!(image.width >= WIDTH as usize && image.height >= height as usize - 5);

    let plot_width = (WIDTH - LEFT - 20) as f64;
    let x_at = |seconds: f64| (LEFT as f64 + seconds / report.duration_s * plot_width) as usize;
    let red = hex(CURVE_COLOUR);
    let top = TOP as usize;
    let bottom = (TOP + PLOT_HEIGHT) as usize;

    // Before the blip (0–55 s) the curve lies on the 0% line; during the crash loop
    // (2m–7m) it sits at 100%, the top of the plot.
    let quiet = image.count_in(x_at(5.0)..x_at(50.0), bottom - 4..bottom + 3, red);
    assert!(
        quiet > 20,
        "curve missing along 0% before the incident ({quiet} red pixels)"
    );
    let loud_top = image.count_in(x_at(150.0)..x_at(400.0), top - 3..top + 4, red);
    assert!(
        loud_top > 100,
        "curve missing at 100% during the crash loop ({loud_top} red pixels)"
    );
    let loud_bottom = image.count_in(x_at(150.0)..x_at(400.0), bottom - 4..bottom + 3, red);
    assert!(
        loud_bottom < loud_top / 10,
        "curve drawn at 0% during the outage"
    );

    // Lanes: each instance is ready before the blip, restarting or booting during the crash
    // loop, ready again at the end.
    let lanes_top = (TOP + PLOT_HEIGHT + 34) as usize;
    for (i, instance) in report.instances.iter().enumerate() {
        let y = lanes_top + i * (LANE_HEIGHT as usize + 3) + LANE_HEIGHT as usize / 2;
        let ready = hex(lane_colour(LaneState::Ready));
        assert!(
            image.is(x_at(20.0), y, ready),
            "{}: not ready before the blip",
            instance.name
        );
        assert!(
            image.is(x_at(report.duration_s - 20.0), y, ready),
            "{}: not ready at the end",
            instance.name
        );
        let troubled = image.count_in(
            x_at(120.0)..x_at(460.0),
            y..y + 1,
            hex(lane_colour(LaneState::Booting)),
        ) + image.count_in(
            x_at(120.0)..x_at(460.0),
            y..y + 1,
            hex(lane_colour(LaneState::Restarting)),
        );
        let span = x_at(460.0) - x_at(120.0);
        assert!(
            troubled * 10 > span * 9,
            "{}: lane not booting/restarting during the crash loop",
            instance.name
        );
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn svg_and_html_are_self_contained() {
    let report = report();
    let html = chart::html(std::slice::from_ref(&report));
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(
        !html.contains("http://") || !html.contains("<script"),
        "no scripts"
    );
    assert!(!html.contains("https://"), "no network references");
    let svg = chart::svg(std::slice::from_ref(&report));
    assert!(svg.contains("class=\"curve\""));
    assert_eq!(
        svg.matches("class=\"lane ").count(),
        report
            .instances
            .iter()
            .map(|i| i.lanes.len())
            .sum::<usize>()
    );
}
