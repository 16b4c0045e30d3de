//! The generic runner: a workload's contenders, warm-up with match
//! digests, then alternating timed passes.

use cep_bench::suite::{Pass, PassFn, Workload};

use super::progress::Progress;

/// What one contender did.
#[derive(Debug)]
pub struct Measured {
    /// The contender's name.
    pub name: &'static str,
    /// The warm-up pass (with the match digest).
    pub warm: Pass,
    /// The timed passes.
    pub passes: Vec<Pass>,
    /// Peak RSS of a child process running this contender alone, in kB.
    pub rss_kb: Option<u64>,
}

/// A summary of the timed passes.
#[derive(Clone, Copy, Debug)]
pub struct Summary {
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub matches_per_sec: f64,
    pub allocs_per_event: f64,
}

impl Measured {
    /// Median, min and max events/s; median matches/s and allocations per event.
    pub fn summary(&self) -> Summary {
        let eps: Vec<f64> = self.passes.iter().map(|p| p.events as f64 / p.seconds).collect();
        let mps: Vec<f64> = self.passes.iter().map(|p| p.matches as f64 / p.seconds).collect();
        let ape: Vec<f64> = self.passes.iter().map(|p| p.allocations as f64 / p.events.max(1) as f64).collect();
        Summary {
            median: median(&eps),
            min: eps.iter().copied().fold(f64::INFINITY, f64::min),
            max: eps.iter().copied().fold(0.0, f64::max),
            matches_per_sec: median(&mps),
            allocs_per_event: median(&ape),
        }
    }
}

/// The median (the mean of the middle two for an even count).
pub fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// What a workload gave.
#[derive(Debug)]
pub struct Outcome {
    /// The workload's name.
    pub name: String,
    /// Per contender, in the workload's order.
    pub contenders: Vec<Measured>,
    /// Every disagreement found (empty when all is well).
    pub failures: Vec<String>,
}

fn digest(p: &Pass) -> String {
    p.digest.map_or_else(|| "-".into(), |d| format!("{d:016x}"))
}

/// Runs `w`: a warm-up pass per contender (checked against each other and
/// the known count), then `runs` rounds of one timed pass per contender.
pub fn run(w: &Workload, runs: usize, progress: &Progress) -> Outcome {
    let mut failures = Vec::new();
    let mut fns: Vec<PassFn> = w
        .contenders
        .iter()
        .map(|c| {
            progress.set(&format!("{} {}: generating", w.name, c.name));
            c.prepare(w.events)
        })
        .collect();
    let warm: Vec<Pass> = fns
        .iter_mut()
        .zip(&w.contenders)
        .map(|(f, c)| {
            progress.set(&format!("{} {}: warm-up", w.name, c.name));
            let p = f(true);
            progress.step();
            p
        })
        .collect();
    let first = &warm[0];
    for (c, p) in w.contenders.iter().zip(&warm) {
        if (p.events, p.matches, p.digest) != (first.events, first.matches, first.digest) {
            failures.push(format!(
                "{} gives {} matches (digest {}) over {} events, {} gives {} (digest {}) over {}",
                c.name,
                p.matches,
                digest(p),
                p.events,
                w.contenders[0].name,
                first.matches,
                digest(first),
                first.events
            ));
        }
    }
    if let Some(want) = w.expect.filter(|&want| want != first.matches) {
        failures.push(format!("{} gives {} matches; the stream has {want}", w.contenders[0].name, first.matches));
    }

    let mut passes: Vec<Vec<Pass>> = vec![Vec::with_capacity(runs); fns.len()];
    for round in 0..runs {
        for (i, (f, c)) in fns.iter_mut().zip(&w.contenders).enumerate() {
            progress.set(&format!("{} {}: run {}/{runs}", w.name, c.name, round + 1));
            let p = f(false);
            progress.step();
            if p.matches != warm[i].matches {
                failures.push(format!(
                    "{}: run {} gives {} matches, its warm-up gave {}",
                    c.name,
                    round + 1,
                    p.matches,
                    warm[i].matches
                ));
            }
            passes[i].push(p);
        }
    }
    let contenders = w
        .contenders
        .iter()
        .zip(warm)
        .zip(passes)
        .map(|((c, warm), passes)| Measured { name: c.name, warm, passes, rss_kb: None })
        .collect();
    Outcome { name: w.name.clone(), contenders, failures }
}

#[cfg(test)]
mod tests {
    use cep_bench::suite::{Baseline, Check, Contender, Pass, Size, Target, Workload};

    use super::{Progress, median, run};

    /// A contender that "finds" `matches` matches with digest `digest`.
    fn fake(name: &'static str, matches: u64, digest: u64) -> Contender {
        Contender::new(name, move |n| {
            Box::new(move |check| Pass {
                events: n as u64,
                matches,
                digest: check.then_some(digest),
                seconds: 1e-3,
                allocations: 0,
                partials: None,
                setup: None,
                latency: None,
            })
        })
    }

    fn workload(contenders: Vec<Contender>, expect: Option<u64>) -> Workload {
        Workload {
            name: "fake".into(),
            description: String::new(),
            size: Size { full: 10, quick: 10 },
            events: 10,
            baseline: Baseline::Contender("a"),
            target: Target { text: "—".into(), check: Check::None },
            expect,
            series: None,
            contenders,
        }
    }

    #[test]
    fn equal_matches_pass() {
        let w = workload(vec![fake("a", 3, 7), fake("b", 3, 7)], Some(3));
        let out = run(&w, 2, &Progress::hidden());
        assert!(out.failures.is_empty(), "{:?}", out.failures);
        assert_eq!(out.contenders.iter().map(|m| m.passes.len()).collect::<Vec<_>>(), [2, 2]);
    }

    #[test]
    fn a_different_digest_is_a_failure() {
        let w = workload(vec![fake("a", 3, 7), fake("b", 3, 8)], None);
        let out = run(&w, 1, &Progress::hidden());
        assert_eq!(out.failures.len(), 1, "{:?}", out.failures);
        assert!(out.failures[0].starts_with("b gives 3 matches"), "{}", out.failures[0]);
    }

    #[test]
    fn a_wrong_known_count_is_a_failure() {
        let w = workload(vec![fake("a", 3, 7)], Some(4));
        let out = run(&w, 1, &Progress::hidden());
        assert_eq!(out.failures, ["a gives 3 matches; the stream has 4"]);
    }

    #[test]
    fn medians() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&[]).is_nan());
    }
}
