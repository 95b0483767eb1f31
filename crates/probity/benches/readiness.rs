//! The cost of a readiness decision and of each render format, for 20 checks.

// criterion_group! generates an undocumented public function.
#![allow(missing_docs)]

use criterion::{Criterion, criterion_group, criterion_main};
use probity::render::{Clock, Details, Format, Query, Request, render};
use probity::{CheckError, CheckSpec, Detail, Health, ProbeKind, Tier};
use std::hint::black_box;
use std::time::Duration;

fn registry(runtime: &tokio::runtime::Runtime) -> Health {
    runtime.block_on(async {
        let mut builder = Health::builder().service("bench");
        for i in 0..20 {
            let (tier, fails) = match i {
                0..=11 => (Tier::Hard, false),
                12..=16 => (Tier::Soft, i == 16),
                _ => (Tier::Info, i == 19),
            };
            let spec = CheckSpec::new(format!("dependency-{i:02}"), tier, move || async move {
                if fails {
                    Err(CheckError::new("connection refused (127.0.0.1:6390)"))
                } else {
                    Ok(Detail::new()
                        .measurement("connections", 3.0, None)
                        .measurement("utilization", 60.0, Some("percent")))
                }
            })
            .interval(Duration::from_secs(3600))
            .timeout(Duration::from_secs(1));
            builder = builder.check(spec);
        }
        let health = builder.build().expect("valid registry");
        health.start().expect("runtime present");
        tokio::time::sleep(Duration::from_millis(50)).await;
        health
    })
}

fn benches(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let health = registry(&runtime);
    let snapshot = health.snapshot();
    let now = tokio::time::Instant::now();
    assert_eq!(
        snapshot.status(ProbeKind::Readiness, now),
        probity::Status::Warn
    );

    c.bench_function("readiness decision (20 checks)", |b| {
        b.iter(|| black_box(&snapshot).status(ProbeKind::Readiness, black_box(now)))
    });
    c.bench_function("load snapshot + readiness decision (20 checks)", |b| {
        b.iter(|| {
            black_box(&health)
                .snapshot()
                .status(ProbeKind::Readiness, tokio::time::Instant::now())
        })
    });
    let plain = Query::default();
    let verbose = Query {
        verbose: true,
        exclude: Vec::new(),
    };
    let clock = Clock::now();
    for (name, format, query) in [
        ("render text (20 checks)", Format::Text, &plain),
        ("render text verbose (20 checks)", Format::Text, &verbose),
        ("render json (20 checks)", Format::Json, &plain),
        ("render health+json (20 checks)", Format::HealthJson, &plain),
    ] {
        let request = Request {
            probe: ProbeKind::Readiness,
            check: None,
            query,
            format,
            details: Details::Admin,
        };
        c.bench_function(name, |b| {
            b.iter(|| render(black_box(&snapshot), black_box(&request), clock))
        });
    }
}

criterion_group!(readiness, benches);
criterion_main!(readiness);
