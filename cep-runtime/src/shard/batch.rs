//! A batch: a slice's events in one bundle, with the queries each is for,
//! laid out so that a worker runs them where they are.

use super::*;

/// A slice's events in one [`Bundle`], with the queries each is for. The
/// events are copied into the events of a bundle sent before (once its
/// worker has dropped it), which keep their field vectors: filling a batch
/// allocates nothing once they have grown, and the worker runs the events
/// where they are. (Flat rows, [`FlatEvents`](cep_core::FlatEvents), as the
/// partitioned reader's blocks use, cost the shard a rebuild of every
/// event: W5 through 2 shards made 10 % more instructions on the shards and
/// 5 % more CPU time.)
#[derive(Debug, Default)]
pub(super) struct Batch {
    /// The events: the first `len`, copied into events kept from before
    /// (each keeps its field vector, so that once grown nothing is
    /// allocated), which the shard runs where they are.
    pub(super) events: Vec<Event>,
    pub(super) len: usize,
    /// Per event, the queries (bit `i` for query `i`, [`LEVELS_BIT`]) it
    /// is for; empty when every event is for the queries of `mask`.
    pub(super) masks: Vec<u64>,
    /// The queries of every event, when `masks` is empty: the routes are
    /// fixed while a batch fills (they change only between batches), and
    /// with every query keyed by one field each event is for all of them.
    pub(super) mask: u64,
    /// An event was added past those kept (see [`Bundle::lay_out`]).
    pub(super) grew: bool,
}

impl Batch {
    /// Appends `e`, for the queries of `mask`. (A batch is filled one way
    /// only: the routes change only right after a send, when the bundles
    /// are empty and no slice holds events on its way back, since changing
    /// them goes through `control` on every slice.)
    #[inline]
    pub(super) fn push(&mut self, e: &Event, mask: u64) {
        debug_assert!(self.masks.len() == self.len, "a batch's events are routed one way");
        self.copy(e);
        self.masks.push(mask);
    }

    /// Copies `e` after the batch's events.
    #[inline(always)]
    pub(super) fn copy(&mut self, e: &Event) {
        match self.events.get_mut(self.len) {
            Some(slot) => slot.clone_from(e),
            None => {
                self.events.push(e.clone());
                self.grew = true;
            }
        }
        self.len += 1;
    }

    /// Appends `e`, for the queries of `mask`, the same for every event of
    /// the batch (see [`mask`](Self::mask)).
    #[inline]
    pub(super) fn push_for_all(&mut self, e: &Event, mask: u64) {
        debug_assert!(self.masks.is_empty(), "a batch's events are routed one way");
        self.copy(e);
        self.mask = mask;
    }

    /// Empties the batch, keeping its capacity.
    pub(super) fn clear(&mut self) {
        self.len = 0;
        self.masks.clear();
    }

    /// Whether, as a part of a bundle, it should be laid out (again): it
    /// has no events yet, or it grew past those it kept.
    pub(super) fn needs_layout(&self) -> bool {
        self.events.is_empty() || self.grew
    }

    /// Runs the events on `runner`, where they are: at once when all are
    /// for the same queries (no per-event masks), else run by run of events
    /// for the same queries.
    pub(super) fn run_on(&self, runner: &mut Runner, sink: &mut impl Sink) -> Result<(), PushError> {
        let events = &self.events[..self.len];
        if self.masks.is_empty() && !events.is_empty() {
            runner.push_batch_for(events, self.mask, sink)?;
        }
        let mut start = 0;
        while start < self.masks.len() {
            let mask = self.masks[start];
            let len = self.masks[start..].iter().take_while(|&&m| m == mask).count();
            runner.push_batch_for(&events[start..start + len], mask, sink)?;
            start += len;
        }
        Ok(())
    }
}

/// What the reader sends a worker thread at once: per slice, its events
/// (none for the slices the worker does not run), then the watermark. One
/// message per worker and send, whatever the number of slices, so the
/// bounded queue counts sends.
#[derive(Debug, Default)]
pub(super) struct Bundle {
    /// Per slice (by index), its events.
    pub(super) parts: Vec<Batch>,
    /// The watermark to apply after the events (`Timestamp::MIN`: none).
    pub(super) wm: Timestamp,
}

impl Bundle {
    /// Appends `e`, for slice `j` and the queries of `mask`, the same for
    /// every event (see [`Batch::mask`]).
    #[inline(always)]
    pub(super) fn push_for_all(&mut self, e: &Event, j: usize, mask: u64) {
        self.parts[j].push_for_all(e, mask);
    }

    /// Appends `e`, for slice `j` and the queries of `mask`.
    #[inline]
    pub(super) fn push(&mut self, e: &Event, j: usize, mask: u64) {
        self.parts[j].push(e, mask);
    }

    /// An empty bundle for `slices` slices.
    pub(super) fn new(slices: usize) -> Bundle {
        Bundle { parts: (0..slices).map(|_| Batch::default()).collect(), wm: Timestamp::MIN }
    }

    /// Empties the bundle, keeping its capacity.
    pub(super) fn clear(&mut self) {
        self.parts.iter_mut().for_each(Batch::clear);
        self.wm = Timestamp::MIN;
    }

    /// Whether a part of one of the slices `mine` says its worker runs
    /// should be laid out (again): it has no events yet, or it grew past
    /// those it kept.
    pub(super) fn needs_layout(&self, mine: impl Fn(usize) -> bool) -> bool {
        self.parts.iter().enumerate().any(|(j, p)| mine(j) && p.needs_layout())
    }

    /// Lays the parts out anew: each part's events (as many as it held at
    /// most, and at least its share of a batch, with a quarter more),
    /// allocated one after the other with `width` fields each. So that a
    /// part's events lie in order in memory, as they are written: grown one
    /// by one while events of every slice come, they lay scattered, each
    /// copy into them missed the caches, and the calling thread copied into
    /// 8 parts at a third of the speed of 1 (46 against 13.5 ns an event).
    /// Only the parts of the slices `mine` says the bundle's worker runs
    /// now: the others stay as they are (empty, in a new bundle), since the
    /// worker gets none of their events; with a part for every slice, a
    /// worker of 4 threads' runtime kept 8 parts of events and filled 2. A
    /// slice given to the worker later grows its part as its events come,
    /// and the part is laid out when the bundle is next filled.
    ///
    /// The share laid out ahead of need is bounded by [`LAYOUT_BYTES`] of
    /// values: with 100,000 columns, 2,560 events of a part laid out ahead
    /// were 4 GB, and `--threads 2` on 300 such rows reached 20 GB.
    pub(super) fn lay_out(&mut self, slices: usize, width: usize, mine: impl Fn(usize) -> bool) {
        self.parts.resize_with(slices, Batch::default);
        let share = (BATCH / slices).min(LAYOUT_BYTES / (width.max(1) * std::mem::size_of::<Value>()));
        // One template (each `Event::default()` interns its type name).
        let blank = Event { fields: vec![Value::Null; width], ..Event::default() };
        for (j, part) in self.parts.iter_mut().enumerate() {
            if !(mine(j) && part.needs_layout()) {
                continue;
            }
            let want = part.events.len().max(share) * 5 / 4;
            part.events = Vec::with_capacity(want);
            part.events.resize(want, blank.clone());
            part.grew = false;
        }
    }
}
