//! The simulator's cost: a quiet hour of 2000 pods at full probe resolution (liveness and
//! readiness every 2 s, a cached check polled every 5 s), and an hour of a large fleet through
//! a one-minute outage of its shared database at 12,500 and 25,000 pods (the scenario in
//! `benches/scenarios/` is written for 100,000; the CLI runs that size, see docs/simulate.md).

#![allow(missing_docs)] // criterion_group! and criterion_main! generate undocumented items

use criterion::{Criterion, criterion_group, criterion_main};
use probity_sim::{Format, Scenario, simulate};
use std::hint::black_box;
use std::path::{Path, PathBuf};

fn fleet(c: &mut Criterion) {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let quiet = Scenario::load(&root.join("../../scenarios/probe-cost-2000-pods.yaml"))
        .expect("the probe-cost scenario loads");
    let outage_path = root.join("benches/scenarios/fleet-wide-outage-100000-pods.yaml");
    let outage = std::fs::read_to_string(&outage_path).expect("the outage scenario reads");
    let mut group = c.benchmark_group("simulate");
    group.sample_size(10);
    group.bench_function("2000 pods, 1 h, probes every 2 s", |bench| {
        bench.iter(|| black_box(simulate(black_box(&quiet), 1)))
    });
    for pods in [12_500, 25_000] {
        let text = outage.replace("replicas: 100000", &format!("replicas: {pods}"));
        let scenario = Scenario::parse(&text, Format::Yaml, Path::new("outage.yaml"))
            .expect("the outage scenario parses");
        group.bench_function(format!("{pods} pods, 1 h, a fleet-wide outage"), |bench| {
            bench.iter(|| black_box(simulate(black_box(&scenario), 1)))
        });
    }
    group.finish();
}

criterion_group!(benches, fleet);
criterion_main!(benches);
