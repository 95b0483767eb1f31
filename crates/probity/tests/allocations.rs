//! A probe that passes, asked plainly, allocates nothing: loading the snapshot, deciding and
//! rendering `ok` stay off the heap, so a load balancer's probes cost no allocator traffic
//! however often they arrive. Nor does a worker's heartbeat, beaten for every message. Counted
//! by a counting allocator (`stats_alloc`). (Any other answer a surface asks for again is the
//! one it kept: probity-axum's `answers`.)

use probity::render::{Clock, Details, Format, Query, Request, render};
use probity::{CheckSpec, Detail, Health, ProbeKind, Tier};
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};
use std::alloc::System;
use std::time::Duration;

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// Heap allocations (and reallocations) made while `work` runs. Nothing else runs meanwhile:
/// the pollers live on a current-thread runtime that is not being driven.
fn allocations(work: impl FnOnce()) -> usize {
    let region = Region::new(GLOBAL);
    work();
    let change = region.change();
    change.allocations + change.reallocations
}

#[test]
fn a_plain_passing_probe_allocates_nothing() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let health = runtime.block_on(async {
        let mut builder = Health::builder().service("alloc");
        for i in 0..20 {
            let tier = [Tier::Hard, Tier::Soft, Tier::Info][i % 3];
            builder = builder.check(
                CheckSpec::new(format!("dependency-{i:02}"), tier, || async {
                    Ok(Detail::new().measurement("connections", 3.0, None))
                })
                .interval(Duration::from_secs(3600))
                .timeout(Duration::from_secs(1)),
            );
        }
        let health = builder
            .startup_step("warmup")
            .heartbeat("outbox", Duration::from_secs(3600))
            .build()
            .unwrap();
        health.start().unwrap();
        health.complete_step("warmup").unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
        health
    });
    let query = Query::default();
    for probe in [
        ProbeKind::Readiness,
        ProbeKind::Liveness,
        ProbeKind::Startup,
    ] {
        let request = Request {
            probe,
            check: None,
            query: &query,
            format: Format::Text,
            details: Details::Public,
        };
        // The first answer may initialise lazily (the clock); steady state is what counts.
        let _ = render(&health.snapshot(), &request, Clock::now());
        let counted = allocations(|| {
            for _ in 0..1_000 {
                let snapshot = health.snapshot();
                let answer = render(&snapshot, &request, Clock::now());
                assert_eq!((answer.status, answer.body.as_ref()), (200, "ok\n"));
            }
        });
        assert_eq!(
            counted, 0,
            "{probe:?}: {counted} allocations in 1,000 plain answers"
        );
    }
    // A worker's beat is an atomic store, and a retry loop re-declaring the same bounded wait
    // allocates nothing after its first round: neither costs the allocator per message.
    let heartbeat = health.heartbeat("outbox").unwrap();
    drop(heartbeat.waiting_on("broker", Duration::from_secs(5)));
    let counted = allocations(|| {
        for _ in 0..1_000 {
            heartbeat.beat();
            drop(heartbeat.waiting_on("broker", Duration::from_secs(5)));
        }
    });
    assert_eq!(counted, 0, "{counted} allocations in 1,000 beats and waits");
    // The counter counts: a verbose answer builds its body.
    let verbose = Query {
        verbose: true,
        exclude: Vec::new(),
    };
    let request = Request {
        probe: ProbeKind::Readiness,
        check: None,
        query: &verbose,
        format: Format::Text,
        details: Details::Public,
    };
    assert!(allocations(|| drop(render(&health.snapshot(), &request, Clock::now()))) > 0);
    drop(runtime);
}
