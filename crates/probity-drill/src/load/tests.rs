//! Tests of `load`.

use super::*;

fn sample(start: Instant, millis: u64, outcome: Outcome) -> Sample {
    Sample {
        sent: start + Duration::from_millis(millis),
        latency: Duration::from_millis(millis % 7 + 1),
        outcome,
        class: 0,
        marked: false,
    }
}

#[test]
fn captured_values_fill_paths_and_a_url_is_kept_as_its_path() {
    assert_eq!(as_path("http://127.0.0.1:9/orders/7?x=1"), "/orders/7?x=1");
    assert_eq!(as_path("https://host"), "/");
    assert_eq!(as_path("/orders/7"), "/orders/7");
    let captures = Captures::default();
    let read = LoadRequest {
        template: vec![PathPart::Text("/x".into()), PathPart::Captured(1)],
        ..LoadRequest::get("/x{captured.write}")
    };
    let mut rng = fastrand::Rng::with_seed(1);
    assert_eq!(captures.path(&read, &mut rng), None, "nothing captured yet");
    for n in 0..(MAX_CAPTURED + 10) {
        captures.keep(1, format!("/{n}"));
    }
    assert_eq!(captures.len(1), MAX_CAPTURED, "bounded");
    let path = captures.path(&read, &mut rng).unwrap();
    let n: usize = path.trim_start_matches("/x/").parse().unwrap();
    assert!(n >= 10, "the oldest were dropped: {path}");
    assert_eq!(
        captures
            .path(&LoadRequest::get("/plain"), &mut rng)
            .as_deref(),
        Some("/plain")
    );
}

#[test]
fn counts_and_rates_over_windows() {
    let timeline = Timeline::default();
    let start = Instant::now();
    for i in 0..100u64 {
        let outcome = if (30..40).contains(&i) {
            Outcome::Status(503)
        } else {
            Outcome::Status(201)
        };
        timeline.push(sample(start, i * 10, outcome));
    }
    let counts = timeline.counts(start, start + Duration::from_secs(1));
    assert_eq!(
        counts,
        Counts {
            total: 100,
            failed: 10
        }
    );
    assert!((counts.error_rate() - 0.1).abs() < 1e-9);
    let peak = timeline.peak_error_rate(
        start,
        start + Duration::from_millis(900),
        Duration::from_millis(100),
    );
    assert_eq!(peak, 1.0);
    let peak = timeline.peak_error_rate(
        start,
        start + Duration::from_millis(900),
        Duration::from_millis(200),
    );
    assert_eq!(peak, 0.5);
    assert_eq!(
        timeline.first_success_after(start + Duration::from_millis(300)),
        Some(start + Duration::from_millis(400))
    );
    assert_eq!(
        timeline.last_failure_between(start, start + Duration::from_secs(1)),
        Some(start + Duration::from_millis(390))
    );
    assert_eq!(Counts::default().error_rate(), 0.0);
}

#[test]
fn reports_count_every_kind_of_failure_and_the_latency_percentiles() {
    let start = Instant::now();
    let mut samples: Vec<Sample> = (0..96)
        .map(|i| Sample {
            sent: start + Duration::from_millis(i),
            latency: Duration::from_millis(i + 1),
            outcome: Outcome::Status(201),
            class: 0,
            marked: false,
        })
        .collect();
    for outcome in [
        Outcome::RefusedByBalancer,
        Outcome::BalancerError(502),
        Outcome::ConnectionRefused,
        Outcome::TimedOut,
    ] {
        samples.push(Sample {
            sent: start,
            latency: Duration::from_millis(1000),
            outcome,
            class: 0,
            marked: false,
        });
    }
    let report = LoadReport::from_samples(&samples, Duration::from_secs(2));
    assert_eq!(report.requests, 100);
    assert_eq!(report.succeeded, 96);
    assert_eq!(report.failed, 4);
    assert_eq!(report.refused_by_balancer, 1);
    assert_eq!(report.balancer_errors, 1);
    assert_eq!(report.balancer_refusals(), 2);
    assert_eq!(report.connection_refused, 1);
    assert_eq!(report.timed_out, 1);
    assert_eq!(report.statuses.get(&201), Some(&96));
    assert_eq!(report.statuses.get(&503), Some(&1));
    assert_eq!(report.statuses.get(&502), Some(&1));
    assert_eq!(report.requests_per_second, 50.0);
    assert_eq!(report.throughput, 48.0);
    assert_eq!(report.latency_p50, Duration::from_millis(50));
    assert_eq!(report.latency_p99, Duration::from_millis(1000));
    assert_eq!(report.latency_max, Duration::from_millis(1000));
    // The four failures were all sent in the first 100 ms.
    assert_eq!(report.failing_s, 0.1);
    let text = report.to_string();
    assert!(text.contains("96 × 201"), "{text}");
    assert!(
        text.contains("1 refused by the balancer (<NOSRV>)"),
        "{text}"
    );

    let empty = LoadReport::from_samples(&[], Duration::ZERO);
    assert_eq!(empty.latency_p99, Duration::ZERO);
    assert_eq!(empty.requests_per_second, 0.0);
    assert_eq!(empty.failing_s, 0.0);
}
