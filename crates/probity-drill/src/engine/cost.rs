//! What health checking costs in throughput, measured so the machine's noise cannot pass for it.
//!
//! Measured one after the other, two fleets' throughput differs by far more than a health check
//! costs: a machine shared with other work changes speed by 10–40% from one minute to the next.
//! So, as `scripts/bench-http.sh` pairs its targets, the fleets are served **at the same time**,
//! under the same traffic, on the same cores: the fleet as the file has it, a control fleet
//! identical to it, and a bare fleet with no health checking at all (no probes, HAProxy without
//! checks, the app changed by `cost.bare`). Each gets its own HAProxy and the same load; the
//! kernel shares the machine between them, so whatever it does meanwhile falls on all three
//! alike. The cost is what the two checked fleets serve against the bare one; the control —
//! the fleet against its identical twin — is the instrument's own noise, reported beside it, in
//! every run.
//!
//! Throughput still depends on how the kernel shares the cores from one second to the next. The
//! CPU time each fleet's processes spend per request served does not: the drill reads it from
//! the kernel's accounting every block ([`super::cpu`]) — on a saturated machine throughput is
//! the inverse of CPU per request, so the two agree in expectation. Throughput is the figure
//! judged, CPU per request is shown beside it (`targets::cost_check` says why).

use super::cpu;
use super::fleet::{Fleet, Shared, Variant};
use super::report::{CheckCost, CpuCost};
use super::traffic::Running;
use crate::DrillError;
use crate::file::Cost;
use crate::load::{LoadHandle, Sample, Timeline};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// Each window the throughputs are compared in.
pub const WINDOW: Duration = Duration::from_secs(1);

/// The two fleets beside the drill's, under load.
#[derive(Debug)]
pub struct Bench {
    bare: Fleet,
    control: Fleet,
    bare_load: LoadHandle,
    control_load: LoadHandle,
    cpu: Arc<Mutex<Vec<CpuSample>>>,
    _sampler: AbortOnDrop,
}

/// A task that ends with its owner.
#[derive(Debug)]
struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The three fleets' CPU time (nanoseconds) at one instant: the drill's, the control, the bare.
#[derive(Debug, Clone, Copy)]
struct CpuSample {
    at: Instant,
    nanos: [u64; 3],
}

impl Bench {
    /// Starts the bare and the control fleets and their traffic (for at most `bound`).
    pub async fn start(
        shared: &Shared<'_>,
        fleet: &impl super::backend::Backend,
        cost: &Cost,
        work: &Path,
        traffic: &Running,
        timeout: Duration,
        bound: Duration,
    ) -> Result<Bench, DrillError> {
        shared.progress.step(
            "  starting a bare fleet (no health checking) and a control fleet (identical) beside it",
        );
        let bare = Fleet::build(
            shared,
            &Variant::Bare(cost.bare.clone()),
            &work.join("bare"),
            Some("bare"),
        )
        .await?;
        let control = match Fleet::build(
            shared,
            &Variant::Checked,
            &work.join("control"),
            Some("control"),
        )
        .await
        {
            Ok(control) => control,
            Err(error) => {
                bare.shutdown().await;
                return Err(error);
            }
        };
        let started = async {
            bare.start(timeout).await?;
            control.start(timeout).await
        }
        .await;
        if let Err(error) = started {
            bare.shutdown().await;
            control.shutdown().await;
            return Err(error);
        }
        let bare_load = traffic.also_to(bare.balancer.frontend, bound);
        let control_load = traffic.also_to(control.balancer.frontend, bound);
        // The CPU time of each fleet at every block's edge, read off the runtime's threads
        // (a scan of /proc) and bounded by the traffic's own bound.
        let cpu = Arc::new(Mutex::new(Vec::new()));
        // Nothing restarts while the cost is measured (a restart is a missed target of its own),
        // so the processes are listed once.
        let processes = [fleet.processes(), control.processes(), bare.processes()];
        let sampler = tokio::spawn({
            let cpu = cpu.clone();
            async move {
                let deadline = Instant::now() + bound;
                let mut every = tokio::time::interval(WINDOW * BLOCK as u32);
                while Instant::now() < deadline {
                    every.tick().await;
                    let processes = processes.clone();
                    // Stamped with the middle of the scan, which is when it read on average.
                    let read = tokio::task::spawn_blocking(move || {
                        let start = Instant::now();
                        let nanos = cpu::nanos(&processes);
                        (start + start.elapsed() / 2, nanos)
                    })
                    .await;
                    if let (Ok((at, nanos)), Ok(mut samples)) = (read, cpu.lock()) {
                        samples.push(CpuSample { at, nanos });
                    }
                }
            }
        });
        Ok(Bench {
            bare,
            control,
            bare_load,
            control_load,
            cpu,
            _sampler: AbortOnDrop(sampler),
        })
    }

    /// Stops the two fleets and compares the throughputs of `[from, to)`; `fleet` is what the
    /// drill's fleet served, `success` says which samples count.
    pub async fn finish(
        self,
        fleet: &Timeline,
        from: Instant,
        to: Instant,
        success: impl Fn(&Sample) -> bool,
    ) -> CheckCost {
        drop(self._sampler);
        self.bare_load.stop();
        self.control_load.stop();
        let bare = self.bare_load.timeline().samples(from, to);
        let control = self.control_load.timeline().samples(from, to);
        let fleet = fleet.samples(from, to);
        self.bare.shutdown().await;
        self.control.shutdown().await;
        let cpu_samples: Vec<CpuSample> = self
            .cpu
            .lock()
            .map(|samples| {
                samples
                    .iter()
                    .filter(|sample| sample.at >= from && sample.at <= to)
                    .copied()
                    .collect()
            })
            .unwrap_or_default();
        let per_window = |samples: &[Sample]| windows(samples, from, to, &success);
        let mut cost = compare(
            &per_window(&fleet),
            &per_window(&control),
            &per_window(&bare),
        );
        let served = |samples: &[Sample], a: Instant, b: Instant| {
            samples
                .iter()
                .filter(|s| s.sent >= a && s.sent < b && success(s))
                .count() as u64
        };
        let blocks: Vec<CpuBlock> = cpu_samples
            .windows(2)
            .map(|pair| {
                let (a, b) = (pair[0], pair[1]);
                CpuBlock {
                    nanos: [0, 1, 2].map(|i| b.nanos[i].saturating_sub(a.nanos[i])),
                    served: [
                        served(&fleet, a.at, b.at),
                        served(&control, a.at, b.at),
                        served(&bare, a.at, b.at),
                    ],
                }
            })
            .collect();
        cost.cpu = cpu_compare(&blocks);
        cost
    }
}

/// One block's CPU time (nanoseconds) and requests served: the drill's fleet, the control, the
/// bare fleet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuBlock {
    /// CPU time used in the block.
    pub nanos: [u64; 3],
    /// Successful requests sent in it.
    pub served: [u64; 3],
}

/// The cost from CPU time per request served: `1 − bare / checked` (checked the mean of the
/// drill's fleet and the control), over every block, with its 95% margin over the blocks; the
/// control is `1 − control / fleet`. `None` without two blocks that served and used CPU.
pub fn cpu_compare(blocks: &[CpuBlock]) -> Option<CpuCost> {
    let per_request = |nanos: u64, served: u64| (served > 0).then(|| nanos as f64 / served as f64);
    let cost = |block: &CpuBlock| {
        let fleet = per_request(block.nanos[0], block.served[0])?;
        let control = per_request(block.nanos[1], block.served[1])?;
        let bare = per_request(block.nanos[2], block.served[2])?;
        let checked = (fleet + control) / 2.0;
        (checked > 0.0 && bare > 0.0).then(|| (1.0 - bare / checked, 1.0 - control / fleet))
    };
    let each: Vec<(f64, f64)> = blocks.iter().filter_map(cost).collect();
    if each.len() < 2 {
        return None;
    }
    let total = blocks.iter().fold(
        CpuBlock {
            nanos: [0; 3],
            served: [0; 3],
        },
        |mut sum, block| {
            for i in 0..3 {
                sum.nanos[i] += block.nanos[i];
                sum.served[i] += block.served[i];
            }
            sum
        },
    );
    let (figure, control) = cost(&total)?;
    let (_, margin) = mean_and_margin(&each.iter().map(|(c, _)| *c).collect::<Vec<_>>());
    let (_, control_margin) = mean_and_margin(&each.iter().map(|(_, c)| *c).collect::<Vec<_>>());
    Some(CpuCost {
        blocks: each.len() as u32,
        cost: figure,
        margin,
        control,
        control_margin,
    })
}

/// Successful requests sent in each whole [`WINDOW`] of `[from, to)`.
fn windows(
    samples: &[Sample],
    from: Instant,
    to: Instant,
    success: &impl Fn(&Sample) -> bool,
) -> Vec<u64> {
    let count = (to.saturating_duration_since(from).as_millis() / WINDOW.as_millis()) as usize;
    let mut served = vec![0; count];
    for sample in samples.iter().filter(|sample| success(sample)) {
        let index =
            (sample.sent.saturating_duration_since(from).as_millis() / WINDOW.as_millis()) as usize;
        if let Some(slot) = served.get_mut(index) {
            *slot += 1;
        }
    }
    served
}

/// Windows per block in the margin's batch means.
///
/// Adjacent 1 s windows are not independent: when the kernel gives one fleet a little more of
/// the cores in one second, another gets it back in the next, so the windows' costs swing
/// further than the run's figure does, and a margin from them overstates the noise. The margin
/// is computed over blocks of this many windows instead (batch means), each block's cost from
/// its summed throughputs, which the swings within a block cancel out of.
pub const BLOCK: usize = 5;

/// Student's t for a two-sided 95% interval with `df` degrees of freedom (1.96 from 30 on).
fn t95(df: usize) -> f64 {
    const TABLE: [f64; 29] = [
        12.71, 4.30, 3.18, 2.78, 2.57, 2.45, 2.36, 2.31, 2.26, 2.23, 2.20, 2.18, 2.16, 2.14, 2.13,
        2.12, 2.11, 2.10, 2.09, 2.09, 2.08, 2.07, 2.07, 2.06, 2.06, 2.06, 2.05, 2.05, 2.05,
    ];
    TABLE.get(df.wrapping_sub(1)).copied().unwrap_or(1.96)
}

/// The mean of `values` and half its 95% interval (Student's t, standard error).
fn mean_and_margin(values: &[f64]) -> (f64, f64) {
    let n = values.len() as f64;
    if values.is_empty() {
        return (0.0, 0.0);
    }
    let mean = values.iter().sum::<f64>() / n;
    if values.len() < 2 {
        return (mean, 0.0);
    }
    let variance = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, t95(values.len() - 1) * (variance / n).sqrt())
}

/// Each block's cost (`1 − checked / unchecked` over its summed windows), for blocks of
/// [`BLOCK`] windows (or single windows when there are too few for two blocks).
fn block_costs(checked: &[u64], unchecked: &[u64], halve: bool) -> Vec<f64> {
    let block = if checked.len() >= 2 * BLOCK { BLOCK } else { 1 };
    checked
        .chunks(block)
        .zip(unchecked.chunks(block))
        .filter_map(|(checked, unchecked)| {
            let checked = checked.iter().sum::<u64>() as f64 / if halve { 2.0 } else { 1.0 };
            let unchecked = unchecked.iter().sum::<u64>() as f64;
            (unchecked > 0.0).then(|| 1.0 - checked / unchecked)
        })
        .collect()
}

fn percentile(sorted: &[f64], quantile: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((quantile * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// The cost and the control from each window's successes of the fleet, the control and the
/// bare fleet.
pub fn compare(fleet: &[u64], control: &[u64], bare: &[u64]) -> CheckCost {
    let sum = |values: &[u64]| values.iter().sum::<u64>() as f64;
    let seconds = (fleet.len() as f64) * WINDOW.as_secs_f64();
    let rate = |values: &[u64]| {
        if seconds > 0.0 {
            sum(values) / seconds
        } else {
            0.0
        }
    };
    let ratio_cost = |checked: f64, unchecked: f64| {
        if unchecked > 0.0 {
            1.0 - checked / unchecked
        } else {
            0.0
        }
    };
    let both: Vec<u64> = fleet.iter().zip(control).map(|(a, b)| a + b).collect();
    let costs = block_costs(&both, bare, true);
    let controls = block_costs(fleet, control, false);
    let (_, cost_margin) = mean_and_margin(&costs);
    let (_, control_margin) = mean_and_margin(&controls);
    let mut sorted = costs.clone();
    sorted.sort_by(f64::total_cmp);
    CheckCost {
        window_s: WINDOW.as_secs_f64(),
        windows: fleet.len() as u32,
        block_s: WINDOW.as_secs_f64()
            * if fleet.len() >= 2 * BLOCK {
                BLOCK as f64
            } else {
                1.0
            },
        fleet_rps: rate(fleet),
        control_rps: rate(control),
        bare_rps: rate(bare),
        cost: ratio_cost((sum(fleet) + sum(control)) / 2.0, sum(bare)),
        cost_margin,
        cost_p10: percentile(&sorted, 0.10),
        cost_p90: percentile(&sorted, 0.90),
        control: ratio_cost(sum(fleet), sum(control)),
        control_margin,
        cpu: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cost_is_what_the_checked_fleets_lose_against_the_bare_one() {
        // The machine's speed swings from window to window; the fleets swing together.
        let speed = [1000u64, 1400, 900, 1600, 1100, 1300];
        let bare: Vec<u64> = speed.to_vec();
        let fleet: Vec<u64> = speed.iter().map(|s| s * 98 / 100).collect();
        let control: Vec<u64> = speed.iter().map(|s| s * 98 / 100).collect();
        let cost = compare(&fleet, &control, &bare);
        assert!((cost.cost - 0.02).abs() < 0.002, "{cost:?}");
        assert!(cost.cost_margin < 0.002, "the swings cancel: {cost:?}");
        assert!(cost.control.abs() < 1e-9, "{cost:?}");
        assert_eq!(cost.windows, 6);
        assert!((cost.bare_rps - 1216.6).abs() < 1.0, "{cost:?}");
        // No bare throughput at all: no cost claimed.
        assert_eq!(compare(&[1], &[1], &[0]).cost, 0.0);
        assert_eq!(compare(&[], &[], &[]).windows, 0);
    }

    #[test]
    fn swings_between_adjacent_windows_cancel_within_a_block() {
        // The kernel gives the checked fleets 20% more in one second and the bare one 20% more
        // in the next: the windows' costs swing ±20%, the run's figure does not, and neither
        // does the margin over 5 s blocks (each block's sums all but cancel the swing).
        let bare: Vec<u64> = (0..30)
            .map(|i| if i % 2 == 0 { 800 } else { 1200 })
            .collect();
        let checked: Vec<u64> = (0..30)
            .map(|i| if i % 2 == 0 { 1176 } else { 784 })
            .collect();
        let cost = compare(&checked, &checked, &bare);
        assert!((cost.cost - 0.02).abs() < 0.001, "{cost:?}");
        assert_eq!(cost.block_s, 5.0);
        assert!(cost.cost_margin < 0.1, "{cost:?}");
        let per_window = block_costs(
            &checked[..9].iter().map(|n| n * 2).collect::<Vec<_>>(),
            &bare[..9],
            true,
        );
        assert_eq!(
            per_window.len(),
            9,
            "too few windows for two blocks: one each"
        );
    }

    #[test]
    fn the_cpu_cost_is_cpu_per_request_whatever_share_of_the_cores_each_fleet_got() {
        // Each block the kernel hands the fleets different shares of the cores: requests and
        // CPU move together, CPU per request does not. The checked fleets spend 2% more per
        // request than the bare one.
        let blocks: Vec<CpuBlock> = [(300u64, 500u64, 400u64), (520, 310, 450), (400, 400, 410)]
            .iter()
            .map(|&(fleet, control, bare)| CpuBlock {
                nanos: [fleet * 102, control * 102, bare * 100],
                served: [fleet * 10, control * 10, bare * 10],
            })
            .collect();
        let cpu = cpu_compare(&blocks).expect("three blocks");
        assert_eq!(cpu.blocks, 3);
        assert!((cpu.cost - 0.0196).abs() < 0.001, "{cpu:?}");
        assert!(cpu.margin < 0.001, "{cpu:?}");
        assert!(cpu.control.abs() < 1e-9, "{cpu:?}");
        // Fewer than two blocks that served: no figure.
        assert_eq!(cpu_compare(&blocks[..1]), None);
        let idle = CpuBlock {
            nanos: [1, 1, 1],
            served: [0, 0, 0],
        };
        assert_eq!(cpu_compare(&[idle, idle]), None);
    }

    #[test]
    fn successes_are_counted_in_whole_windows() {
        let from = Instant::now();
        let at = |millis: u64, status: u16| Sample {
            sent: from + Duration::from_millis(millis),
            latency: Duration::from_millis(1),
            outcome: crate::load::Outcome::Status(status),
            class: 0,
            marked: false,
        };
        let samples = [
            at(10, 200),
            at(900, 200),
            at(1500, 503),
            at(1600, 200),
            at(2500, 200),
        ];
        let counts = windows(
            &samples,
            from,
            from + Duration::from_millis(2500),
            &|s: &Sample| s.ok(),
        );
        assert_eq!(counts, vec![2, 1], "the last partial window is left out");
    }
}
