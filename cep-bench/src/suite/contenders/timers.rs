//! W6's timer contenders: the engine's wheel against the baseline timer
//! structures, behind the `Timers` trait.

use crate::baseline::timers::Timers;
use crate::suite::digest::measure;
use crate::suite::{Contender, Pass};
use crate::w1;

/// One W6 pass: arm `n` timers (deadlines uniform over 2^20), cancel every
/// other one, then advance the watermark in 64 steps past the last deadline.
/// Events = timers handled (each armed, then cancelled or fired); matches =
/// timers fired.
pub(crate) fn timer_pass<T: Timers + Default>(n: usize, check: bool) -> Pass {
    let mut rng = w1::XorShift64::default();
    let deadlines: Vec<i64> = (0..n).map(|_| (rng.next_u64() % (1 << 20)) as i64).collect();
    let mut handles = Vec::with_capacity(n);
    measure(n, check, |tally| {
        let mut t = T::default();
        for (i, &d) in deadlines.iter().enumerate() {
            handles.push(t.arm(d, i as u32));
        }
        for h in handles.iter().step_by(2) {
            t.cancel(*h);
        }
        for step in 1..=64i64 {
            t.advance(step << 14, &mut |d, v| tally.add_timer(d, v));
        }
        None
    })
}

pub(crate) fn timer_contender<T: Timers + Default + 'static>(name: &'static str) -> Contender {
    Contender::new(name, move |n| Box::new(move |check| timer_pass::<T>(n, check)))
}
