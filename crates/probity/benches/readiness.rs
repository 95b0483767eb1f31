//! The cost of a readiness decision and of each render format, for 20 checks, and the heap
//! allocations of the plain passing answer (counted by a counting allocator: the target is
//! zero). Then the answer as a service sends it: probity-axum's router answering `/readyz`
//! from the answer it keeps, beside a bare axum handler answering `ok` through the same
//! kind of router — their difference is all a kept answer costs, and it allocates nothing the
//! bare handler does not.

// criterion_group! generates an undocumented public function.
#![allow(missing_docs)]

use criterion::{Criterion, criterion_group, criterion_main};
use probity::render::{Clock, Details, Format, Query, Request, render};
use probity::{CheckError, CheckSpec, Detail, Health, ProbeKind, Tier};
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};
use std::alloc::System;
use std::hint::black_box;
use std::time::Duration;
use tower::ServiceExt;

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// 20 checks: 12 hard, 5 soft (one failing when `failing`), 3 info (one failing when
/// `failing`).
fn service(runtime: &tokio::runtime::Runtime, failing: bool) -> Health {
    runtime.block_on(async {
        let mut builder = Health::builder().service("bench");
        for i in 0..20 {
            let (tier, fails) = match i {
                0..=11 => (Tier::Hard, false),
                12..=16 => (Tier::Soft, failing && i == 16),
                _ => (Tier::Info, failing && i == 19),
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

/// Heap allocations made by one plain passing readiness answer: load the snapshot, decide,
/// render. Measured over many answers; the target is zero.
fn allocations_per_plain_answer(health: &Health) -> f64 {
    let query = Query::default();
    let rounds = 10_000;
    let region = Region::new(GLOBAL);
    for _ in 0..rounds {
        let snapshot = black_box(health).snapshot();
        let request = Request {
            probe: ProbeKind::Readiness,
            check: None,
            query: &query,
            format: Format::Text,
            details: Details::Public,
        };
        let answer = render(&snapshot, &request, Clock::now());
        assert_eq!(answer.status, 200);
        black_box(answer);
    }
    let change = region.change();
    (change.allocations + change.reallocations) as f64 / f64::from(rounds)
}

/// One `GET /readyz` through `router`, as a server would call it.
async fn get_readyz(router: &axum::Router) -> axum::http::StatusCode {
    let request = axum::http::Request::get("/readyz")
        .body(axum::body::Body::empty())
        .expect("valid request");
    match router.clone().oneshot(request).await {
        Ok(response) => response.status(),
        Err(never) => match never {},
    }
}

/// Heap allocations of one `GET /readyz` through `router`.
fn allocations_through(runtime: &tokio::runtime::Runtime, router: &axum::Router) -> f64 {
    let rounds = 10_000;
    runtime.block_on(async {
        // The first answer is rendered and kept; the rest are the kept one.
        assert!(get_readyz(router).await.is_success());
        let region = Region::new(GLOBAL);
        for _ in 0..rounds {
            black_box(get_readyz(router).await);
        }
        let change = region.change();
        (change.allocations + change.reallocations) as f64 / f64::from(rounds)
    })
}

/// probity-axum's probes and a bare handler, each called as a service.
fn surfaces(c: &mut Criterion, runtime: &tokio::runtime::Runtime, health: &Health) {
    let probes = probity_axum::Probes::new(health.clone()).router();
    let bare = axum::Router::new().route("/readyz", axum::routing::get(|| async { "ok" }));
    let kept = allocations_through(runtime, &probes);
    let plain = allocations_through(runtime, &bare);
    println!(
        "heap allocations per GET /readyz through a router (20 checks): probity-axum {kept}, bare axum {plain}"
    );
    assert!(
        kept <= plain,
        "a kept answer must allocate nothing a bare handler does not"
    );
    c.bench_function("GET /readyz, bare axum handler", |b| {
        b.iter(|| runtime.block_on(get_readyz(black_box(&bare))))
    });
    c.bench_function("GET /readyz, probity-axum kept answer (20 checks)", |b| {
        b.iter(|| runtime.block_on(get_readyz(black_box(&probes))))
    });
}

fn benches(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let passing = service(&runtime, false);
    let allocations = allocations_per_plain_answer(&passing);
    println!("heap allocations per plain passing /readyz answer (20 checks): {allocations}");
    assert_eq!(allocations, 0.0, "the plain passing path must not allocate");

    let health = service(&runtime, true);
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
    let passing_snapshot = passing.snapshot();
    let plain_passing = Request {
        probe: ProbeKind::Readiness,
        check: None,
        query: &plain,
        format: Format::Text,
        details: Details::Public,
    };
    c.bench_function("render plain passing (20 checks)", |b| {
        b.iter(|| {
            render(
                black_box(&passing_snapshot),
                black_box(&plain_passing),
                clock,
            )
        })
    });
    for (name, format, query) in [
        (
            "render text (20 checks, one soft failing)",
            Format::Text,
            &plain,
        ),
        ("render text verbose (20 checks)", Format::Text, &verbose),
        ("render json (20 checks)", Format::Json, &plain),
        ("render health+json (20 checks)", Format::HealthJson, &plain),
    ] {
        for details in [Details::Public, Details::Admin] {
            let request = Request {
                probe: ProbeKind::Readiness,
                check: None,
                query,
                format,
                details,
            };
            let label = format!(
                "{name} {}",
                if details == Details::Admin {
                    "admin"
                } else {
                    "public"
                }
            );
            c.bench_function(&label, |b| {
                b.iter(|| render(black_box(&snapshot), black_box(&request), clock))
            });
        }
    }
    // Last: the router's allocations would otherwise sit between the checks measured above.
    surfaces(c, &runtime, &passing);
}

criterion_group!(readiness, benches);
criterion_main!(readiness);
