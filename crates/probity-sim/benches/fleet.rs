//! 2000 pods for one simulated hour at full probe resolution (liveness and readiness every
//! 2 s, a cached readiness check polled every 5 s): every probe and every poll is an event.

#![allow(missing_docs)] // criterion_group! and criterion_main! generate undocumented items

use criterion::{Criterion, criterion_group, criterion_main};
use probity_sim::{Scenario, simulate};
use std::hint::black_box;
use std::path::PathBuf;

fn fleet(c: &mut Criterion) {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/probe-cost-2000-pods.yaml");
    let scenario = Scenario::load(&path).expect("the probe-cost scenario loads");
    let mut group = c.benchmark_group("simulate");
    group.sample_size(10);
    group.bench_function("2000 pods, 1 h, probes every 2 s", |b| {
        b.iter(|| black_box(simulate(black_box(&scenario), 1)))
    });
    group.finish();
}

criterion_group!(benches, fleet);
criterion_main!(benches);
