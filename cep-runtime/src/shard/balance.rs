//! How [`ShardedRunner::balanced`](super::ShardedRunner::balanced) follows
//! the load: which thread runs which slice.
//!
//! Every [`Balance::EVERY`] sends the reader looks at how busy each thread
//! was since the last look: a worker's busy time is the time it spent
//! running bundles; the calling thread's is the wall time it did not spend
//! waiting for a full queue (so it includes whatever the caller does
//! between pushes: making or parsing the events). From the events each
//! worker ran it knows a worker's cost per event, and so the time one of
//! its slices takes. It then predicts, for each possible move of one slice
//! (one of a worker's back to the calling thread, or one of the calling
//! thread's to a worker), the time of the busiest thread afterwards, and
//! makes the move that lowers it most, if it lowers it by at least
//! [`Balance::GAIN`], and only once two looks in a row found it.
//!
//! Why not simply watch the queues: a split is between slices, and the
//! best of two neighbouring splits may leave the calling thread the busier
//! (its queue to the worker runs empty), while the next split down leaves
//! the worker far busier. A controller moving on the queues alone went
//! there and back, and a move costs: the slice's state moves to the other
//! core's caches. The prediction keeps the better of the two.
//!
//! Only while events come fast enough that batches fill (each send of the
//! window was of a full batch): on a slow stream the calling thread waits
//! for its input, which looks like work, and nothing needs balancing.

/// What the threads did since the last look.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Load {
    /// Nanoseconds the calling thread was busy (wall time less the time it
    /// waited for a full queue).
    pub here_ns: u64,
    /// Events it ran itself.
    pub here_events: u64,
    /// Slices it runs (not counting one on its way back).
    pub here_slices: usize,
    /// Per worker: nanoseconds busy, events run, slices run.
    pub workers: Vec<(u64, u64, usize)>,
}

/// A slice to move, by thread: the slice itself is the reader's choice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Step {
    /// One of worker `w`'s slices to the calling thread.
    TakeBack(usize),
    /// One of the calling thread's slices to worker `w`.
    Give(usize),
}

/// The state of the balancing (see the [module](self) docs).
#[derive(Debug)]
pub(super) struct Balance {
    /// Sends since the last look.
    pub sends: usize,
    /// Of those, the sends of a full batch.
    pub full_sends: usize,
    /// The step the last look found, and how many looks in a row found it.
    streak: (Option<Step>, u32),
    /// Slices moved so far.
    pub moves: u64,
    /// Whether to follow the load (else only `chaos` moves slices).
    pub follow: bool,
    /// For tests: move a slice at random at every send, with this state.
    pub chaos: Option<u64>,
}

impl Balance {
    /// Sends between two looks (of 4,096 events each, about a millisecond
    /// of W5 on two threads).
    pub const EVERY: usize = 16;
    /// The least share by which a move must lower the busiest thread's
    /// time: below it, measurement noise.
    pub const GAIN: f64 = 0.05;
    /// Looks in a row that must find a move before it is made.
    const PATIENCE: u32 = 2;

    pub fn new() -> Balance {
        Balance { sends: 0, full_sends: 0, streak: (None, 0), moves: 0, follow: true, chaos: None }
    }

    /// Whether this send ends a window: time to [`look`](Self::look).
    pub fn count_send(&mut self, full: bool) -> bool {
        self.sends += 1;
        self.full_sends += usize::from(full);
        self.sends >= Self::EVERY
    }

    /// The look at the end of a window: the step to take now, if any.
    pub fn look(&mut self, load: &Load) -> Option<Step> {
        let steady = self.full_sends == self.sends;
        (self.sends, self.full_sends) = (0, 0);
        let step = if self.follow && steady { best_step(load) } else { None };
        self.streak = match step {
            Some(s) if self.streak.0 == Some(s) => (Some(s), self.streak.1 + 1),
            Some(s) => (Some(s), 1),
            None => (None, 0),
        };
        if self.streak.1 < Self::PATIENCE {
            return None;
        }
        self.streak = (None, 0);
        step
    }
}

impl Default for Balance {
    fn default() -> Balance {
        Balance::new()
    }
}

/// The move of one slice that lowers the busiest thread's predicted time
/// most, if by at least [`Balance::GAIN`]. A slice moved takes, on the
/// thread it goes to, the time it took its worker (the calling thread
/// saves what it would cost a worker, less the copy it no longer makes,
/// which is left out: the prediction errs against moving).
pub(super) fn best_step(load: &Load) -> Option<Step> {
    let busiest = |here: f64, workers: &[f64]| workers.iter().fold(here, |m, &w| m.max(w));
    let here = load.here_ns as f64;
    let busy: Vec<f64> = load.workers.iter().map(|w| w.0 as f64).collect();
    let now = busiest(here, &busy);
    if now <= 0.0 {
        return None;
    }
    let mut best: Option<(f64, Step)> = None;
    for (w, &(ns, events, slices)) in load.workers.iter().enumerate() {
        if events == 0 || slices == 0 {
            continue;
        }
        let per_event = ns as f64 / events as f64;
        let mut consider = |after_here: f64, after_worker: f64, step: Step| {
            let mut b = busy.clone();
            b[w] = after_worker;
            let then = busiest(after_here, &b);
            if best.is_none_or(|(t, _)| then < t) {
                best = Some((then, step));
            }
        };
        if slices > 1 {
            // One of its slices, at its cost.
            let moved = per_event * events as f64 / slices as f64;
            consider(here + moved, busy[w] - moved, Step::TakeBack(w));
        }
        if load.here_slices > 0 {
            let moved = per_event * load.here_events as f64 / load.here_slices as f64;
            consider(here - moved, busy[w] + moved, Step::Give(w));
        }
    }
    let (then, step) = best?;
    (then < now * (1.0 - Balance::GAIN)).then_some(step)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(here_ns: u64, here_events: u64, here_slices: usize, workers: &[(u64, u64, usize)]) -> Load {
        Load { here_ns, here_events, here_slices, workers: workers.to_vec() }
    }

    #[test]
    fn a_busy_worker_gives_a_slice_back() {
        // The worker runs 3 slices, 30 ms for 600 events; the calling
        // thread 10 ms: one slice (10 ms) moved leaves 20 and 20.
        assert_eq!(best_step(&load(10_000_000, 200, 1, &[(30_000_000, 600, 3)])), Some(Step::TakeBack(0)));
    }

    #[test]
    fn a_busy_calling_thread_gives_a_slice_away() {
        // The calling thread is busy 40 ms and runs 2 slices of 300 events
        // each; the worker 10 ms for 400 events (25 us an event): a slice
        // there takes 7.5 ms, leaving 32.5 and 17.5.
        assert_eq!(best_step(&load(40_000_000, 600, 2, &[(10_000_000, 400, 2)])), Some(Step::Give(0)));
    }

    #[test]
    fn a_split_whose_neighbours_are_worse_stays() {
        // The calling thread a little busier (40 against 36 ms): giving
        // its one slice (12 ms at the worker's cost) would leave the worker
        // at 48, worse than 40.
        assert_eq!(best_step(&load(40_000_000, 250, 1, &[(36_000_000, 750, 3)])), None);
        // Nearly even: within the gain.
        assert_eq!(best_step(&load(20_000_000, 500, 2, &[(19_500_000, 500, 2)])), None);
    }

    #[test]
    fn the_idlest_worker_gets_the_slice() {
        let l = load(50_000_000, 400, 2, &[(30_000_000, 300, 1), (10_000_000, 300, 1)]);
        assert_eq!(best_step(&l), Some(Step::Give(1)));
    }

    #[test]
    fn a_move_needs_two_looks_in_a_row_and_full_batches() {
        let busy = load(10_000_000, 200, 1, &[(30_000_000, 600, 3)]);
        let mut b = Balance::new();
        let window =
            |b: &mut Balance, full: bool| (0..Balance::EVERY).all(|i| b.count_send(full) == (i + 1 == Balance::EVERY));
        assert!(window(&mut b, true));
        assert_eq!(b.look(&busy), None, "one look");
        assert!(window(&mut b, true));
        assert_eq!(b.look(&busy), Some(Step::TakeBack(0)), "two in a row");
        assert!(window(&mut b, true));
        assert_eq!(b.look(&busy), None, "the streak starts again");
        // A window with a send of a partial batch (a slow stream) moves
        // nothing, and breaks the streak.
        assert!(window(&mut b, false));
        assert_eq!(b.look(&busy), None);
        assert!(window(&mut b, true));
        assert_eq!(b.look(&busy), None);
        b.follow = false;
        assert!(window(&mut b, true));
        assert_eq!(b.look(&busy), None, "not following");
    }
}
