//! The sending side: the [`Batcher`] that routes each event to its slice,
//! fills batches and sends them when full or when the flush clock says so,
//! meters the load and moves slices between threads.

use super::*;

/// When the reader looks at the clock: every push on a slow stream, every
/// [`MAX_CHECK_EVERY`] pushes on a fast one (the interval halves when a
/// look finds more than an eighth of `flush_after` gone since the last,
/// and doubles otherwise).
#[derive(Debug)]
pub(super) struct Clock {
    pub(super) flush_after: Duration,
    /// Pushes between looks.
    pub(super) every: u32,
    /// Pushes left until the next look.
    pub(super) left: u32,
    pub(super) last_look: Instant,
}

impl Clock {
    pub(super) fn new(flush_after: Duration) -> Clock {
        Clock { flush_after, every: 1, left: 1, last_look: Instant::now() }
    }

    /// Counts a push; true when it is time to look.
    #[inline]
    pub(super) fn tick(&mut self) -> bool {
        self.left -= 1;
        self.left == 0
    }

    /// A look: the time now, and the next look planned.
    pub(super) fn look(&mut self) -> Instant {
        let now = Instant::now();
        let slow = (now - self.last_look) * 8 > self.flush_after;
        self.every = if slow { (self.every / 2).max(1) } else { (self.every * 2).min(MAX_CHECK_EVERY) };
        self.left = self.every;
        self.last_look = now;
        now
    }
}

/// The reader's side of the slices: the front's sink, which runs each
/// released event on the calling thread's runner of its slice, or copies it
/// into the bundle of the worker that runs the slice, and sends the
/// bundles when they hold enough.
pub(super) struct Batcher {
    /// Per worker, its queue.
    pub(super) txs: Vec<Sender<ToShard>>,
    /// Per query, the field its partition key is in.
    pub(super) keys: Vec<Option<FieldId>>,
    /// The field level alerts are keyed by, if there are alerts.
    pub(super) level_key: Option<FieldId>,
    /// Where events go, from `keys` and `level_key`.
    pub(super) routes: Routes,
    /// Scratch: per slice, the mask of the event at hand.
    pub(super) masks: Vec<u64>,
    /// Per slice, where its runner is.
    pub(super) slots: Vec<Slot>,
    /// `slices - 1` when the count of slices is a power of two.
    pub(super) pow2_mask: Option<u64>,
    /// Per slice, the worker that runs it, or [`HERE`] (on the calling
    /// thread, or on its way back to it): `slots` in a form that routing
    /// reads fast (an enum with a batch in it took 10 instructions an event
    /// to tell apart).
    pub(super) worker_of: Vec<u32>,
    /// The output of the slices run here, until written.
    pub(super) here: JsonLines<Vec<u8>>,
    /// Per worker, the bundle being filled.
    pub(super) filling: Vec<Bundle>,
    /// Events released since the last send (run here or in the bundles).
    pub(super) len: usize,
    /// When the first of them was released.
    pub(super) first_at: Instant,
    /// The latest released ts: the watermark sent with the next bundles.
    pub(super) released_ts: Timestamp,
    /// The last watermark sent.
    pub(super) sent_wm: Timestamp,
    /// The fields of an event sent last (to lay out bundles).
    pub(super) width: usize,
    /// Per worker, bundles sent before; one the worker has dropped is
    /// refilled (at most `IN_FLIGHT + 2` per worker ever exist: its queue,
    /// the bundle it runs, and one being handed over).
    pub(super) pool: Vec<Vec<Arc<Bundle>>>,
    /// Moving slices between the threads ([`ShardedRunner::balanced`]).
    pub(super) balance: Option<Balance>,
    /// What the balancing measures.
    pub(super) meter: Meter,
    /// A worker has stopped (its receiver is gone).
    pub(super) stopped: bool,
}

impl Batcher {
    pub(super) fn new(
        txs: Vec<Sender<ToShard>>,
        slots: Vec<Slot>,
        keys: Vec<Option<FieldId>>,
        level_key: Option<FieldId>,
        balance: Option<Balance>,
        meter: Meter,
    ) -> Batcher {
        let (workers, slices) = (txs.len(), slots.len());
        Batcher {
            txs,
            routes: Routes::new(&keys, level_key),
            keys,
            level_key,
            masks: vec![0; slices],
            pow2_mask: slices.is_power_of_two().then(|| slices as u64 - 1),
            worker_of: slots.iter().map(|s| if let Slot::There(w) = s { *w as u32 } else { HERE }).collect(),
            slots,
            here: JsonLines::new(Vec::new()),
            filling: (0..workers).map(|_| Bundle::new(slices)).collect(),
            len: 0,
            first_at: Instant::now(),
            released_ts: Timestamp::MIN,
            sent_wm: Timestamp::MIN,
            width: 0,
            pool: vec![Vec::new(); workers],
            balance,
            meter,
            stopped: false,
        }
    }

    /// Routes by the queries as they are now (after one was added or
    /// removed; the batches sent before carry the masks of before).
    pub(super) fn reroute(&mut self) {
        self.routes = Routes::new(&self.keys, self.level_key);
    }

    /// Sends every worker its bundle (maybe empty) and the watermark `wm`,
    /// waiting while a worker's queue is full; the slices run here move to
    /// `wm` too. Then, when balancing, maybe moves a slice.
    pub(super) fn send(&mut self, wm: Timestamp) -> io::Result<()> {
        self.run_gathered()?;
        let full = self.len >= BATCH;
        self.meter.released += self.len as u64;
        self.len = 0;
        for w in 0..self.txs.len() {
            let pool = &mut self.pool[w];
            let i = free_bundle(pool, self.slots.len());
            let bundle = Arc::get_mut(&mut pool[i]).expect("no shard holds a free bundle");
            std::mem::swap(bundle, &mut self.filling[w]);
            bundle.wm = wm;
            if let Some(p) = bundle.parts.iter().find(|p| p.len > 0) {
                self.width = p.events[p.len - 1].fields.len();
            }
            let next = &mut self.filling[w];
            next.clear();
            let worker_of = &self.worker_of;
            let mine = |j: usize| worker_of[j] == w as u32;
            if next.needs_layout(mine) {
                next.lay_out(self.slots.len(), self.width, mine);
            }
            let bundle = ToShard::Bundle(Arc::clone(&pool[i]));
            self.deliver_timed(w, bundle)?;
        }
        if wm > Timestamp::MIN {
            for slot in &mut self.slots {
                if let Slot::Here(runner, _) = slot {
                    runner.advance_watermark(wm, &mut self.here).map_err(into_io)?;
                }
            }
            // (A `sync` may have sent a later one.)
            self.sent_wm = self.sent_wm.max(wm);
        }
        self.rebalance(full)
    }

    /// [`deliver`](Self::deliver), counting the time waited when the queue
    /// is full (for the balancing) and the events of a bundle.
    pub(super) fn deliver_timed(&mut self, w: usize, msg: ToShard) -> io::Result<()> {
        if let ToShard::Bundle(b) = &msg {
            self.meter.sent[w] += b.parts.iter().map(|p| p.len as u64).sum::<u64>();
        }
        match self.txs[w].try_send(msg) {
            Ok(()) => Ok(()),
            Err(TrySendError::Full(msg)) => {
                let start = Instant::now();
                let sent = self.deliver(w, msg);
                self.meter.waited += start.elapsed();
                sent
            }
            // Fails there, and says so.
            Err(TrySendError::Disconnected(msg)) => self.deliver(w, msg),
        }
    }

    /// Sends `msg` to worker `w`; an error if the worker has stopped (its
    /// receiver is gone).
    pub(super) fn deliver(&mut self, w: usize, msg: ToShard) -> io::Result<()> {
        if self.txs[w].send(msg).is_err() {
            self.stopped = true;
            return Err(io::Error::other(format!("shard {w} stopped")));
        }
        Ok(())
    }

    /// Sends the bundles being filled, if any, then `block` to every worker
    /// (each runs its slices' parts, for the queries of `mask`, then the
    /// watermark: the block's last `ts`).
    pub(super) fn send_block(&mut self, block: Arc<PartedBlock>, mask: u64) -> io::Result<()> {
        if self.len > 0 {
            self.send(self.released_ts)?;
        }
        self.released_ts = block.last_ts();
        self.sent_wm = self.released_ts;
        for w in 0..self.txs.len() {
            self.deliver(w, ToShard::Block(Arc::clone(&block), mask, self.released_ts))?;
        }
        Ok(())
    }

    /// Whether every worker has taken every bundle sent to it.
    pub(super) fn caught_up(&self) -> bool {
        self.txs.iter().all(Sender::is_empty)
    }

    /// How many slices are on their way back from a worker.
    pub(super) fn coming(&self) -> usize {
        self.slots.iter().filter(|s| matches!(s, Slot::Coming(..))).count()
    }

    /// Slice `j`'s runner is back from its worker: it runs the events that
    /// waited for it and the watermark, and from now on every event of the
    /// slice as it comes.
    pub(super) fn arrive(&mut self, j: usize, mut runner: Box<Runner>) -> Result<(), PushError> {
        let Slot::Coming(mut held) = std::mem::replace(&mut self.slots[j], Slot::Coming(Batch::default())) else {
            return Err(PushError::Io(io::Error::other(format!("slice {j} came back unasked"))));
        };
        held.run_on(&mut runner, &mut self.here)?;
        if self.sent_wm > Timestamp::MIN {
            runner.advance_watermark(self.sent_wm, &mut self.here)?;
        }
        held.clear(); // from now on, it gathers the slice's events
        self.set_slot(j, Slot::Here(runner, held));
        Ok(())
    }

    /// Puts slice `j` at `slot`, keeping [`worker_of`](Self::worker_of) in
    /// step; returns where it was.
    pub(super) fn set_slot(&mut self, j: usize, slot: Slot) -> Slot {
        self.worker_of[j] = if let Slot::There(w) = slot { w as u32 } else { HERE };
        std::mem::replace(&mut self.slots[j], slot)
    }

    /// After a send, when balancing: every [`Balance::EVERY`] sends, looks
    /// at the load (see the `balance` module) and maybe moves a slice.
    pub(super) fn rebalance(&mut self, full: bool) -> io::Result<()> {
        let Some(balance) = &mut self.balance else { return Ok(()) };
        let step = if let Some(state) = &mut balance.chaos {
            chaos_move(state, &self.slots, self.txs.len())
        } else if balance.count_send(full) {
            let load = self.meter.take(&self.slots);
            let step = balance.look(&load);
            step.and_then(|s| self.pick(s))
        } else {
            None
        };
        let Some(step) = step else { return Ok(()) };
        if let Some(b) = &mut self.balance {
            b.moves += 1;
        }
        match step {
            Move::Give(j, w) => {
                let Slot::Here(runner, gathered) = self.set_slot(j, Slot::There(w)) else {
                    unreachable!("only a slice run here is given away")
                };
                debug_assert_eq!(gathered.len, 0, "a send ran what the slice gathered");
                // In band: after the bundles sent so far (none of them has
                // events of the slice), before the next.
                self.deliver(w, ToShard::Adopt(j, runner))
            }
            Move::TakeBack(j, w) => {
                // The bundles were just sent: none being filled holds events
                // of the slice.
                self.set_slot(j, Slot::Coming(Batch::default()));
                self.deliver(w, ToShard::Release(j))
            }
        }
    }

    /// The slice a step moves: the last of the worker's, or the first of
    /// the calling thread's; none while one is on its way back.
    pub(super) fn pick(&self, step: Step) -> Option<Move> {
        if self.coming() > 0 {
            return None;
        }
        match step {
            Step::TakeBack(w) => {
                let j = self.slots.iter().rposition(|s| matches!(s, Slot::There(v) if *v == w))?;
                Some(Move::TakeBack(j, w))
            }
            Step::Give(w) => Some(Move::Give(self.slots.iter().position(|s| matches!(s, Slot::Here(..)))?, w)),
        }
    }
}

/// What the reader measures for the balancing, between two looks.
pub(super) struct Meter {
    /// When the last look was.
    pub(super) since: Instant,
    /// The time the calling thread waited on full queues since.
    pub(super) waited: Duration,
    /// Per worker, the events sent to it since.
    pub(super) sent: Vec<u64>,
    /// Events released since.
    pub(super) released: u64,
    /// Per worker, its busy nanoseconds so far (it adds to them).
    pub(super) busy: Arc<Vec<AtomicU64>>,
    /// `busy` at the last look.
    pub(super) busy_then: Vec<u64>,
}

impl Meter {
    /// A meter of the workers whose busy times `busy` holds.
    pub(super) fn new(busy: Arc<Vec<AtomicU64>>) -> Meter {
        let workers = busy.len();
        Meter {
            since: Instant::now(),
            waited: Duration::ZERO,
            sent: vec![0; workers],
            released: 0,
            busy,
            busy_then: vec![0; workers],
        }
    }

    /// The load since the last look, which starts a new window.
    pub(super) fn take(&mut self, slots: &[Slot]) -> Load {
        let now = Instant::now();
        let wall = now - std::mem::replace(&mut self.since, now);
        let here_ns = wall.saturating_sub(std::mem::take(&mut self.waited)).as_nanos() as u64;
        let sent_all: u64 = self.sent.iter().sum();
        let here_events = std::mem::take(&mut self.released).saturating_sub(sent_all);
        let workers = (0..self.sent.len())
            .map(|w| {
                let busy = self.busy[w].load(Ordering::Relaxed);
                let ns = busy.saturating_sub(std::mem::replace(&mut self.busy_then[w], busy));
                let slices = slots.iter().filter(|s| matches!(s, Slot::There(v) if *v == w)).count();
                (ns, std::mem::take(&mut self.sent[w]), slices)
            })
            .collect();
        let here_slices = slots.iter().filter(|s| matches!(s, Slot::Here(..))).count();
        Load { here_ns, here_events, here_slices, workers }
    }
}

/// A slice to move: give slice `j`, run here, to worker `w`, or take it
/// back from worker `w`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Move {
    Give(usize, usize),
    TakeBack(usize, usize),
}

/// A random move (for tests of moving slices): a slice run here to a
/// random worker, or one run on a worker back here.
pub(super) fn chaos_move(state: &mut u64, slots: &[Slot], workers: usize) -> Option<Move> {
    // xorshift64
    let mut next = || {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state as usize
    };
    let first = next();
    // The first slice from a random one on that is not on its way back.
    (0..slots.len()).map(|i| (first + i) % slots.len()).find_map(|j| match slots[j] {
        Slot::Here(..) => Some(Move::Give(j, next() % workers)),
        Slot::There(w) => Some(Move::TakeBack(j, w)),
        Slot::Coming(..) => None,
    })
}

/// The index of a bundle of `pool` that no worker holds: of those, the one
/// sent longest ago (a new one, for `slices` slices, if all are held). It
/// moves to the end, so the pool stays in the order its bundles were sent.
/// Reusing the bundle sent longest ago rather than the one just run lets
/// its memory leave the caches of the worker's core before the calling
/// thread writes it again: on W5 with two shards the calling thread's CPU
/// went from about 23 to 18 ns an event, and the throughput up by a tenth.
pub(super) fn free_bundle(pool: &mut Vec<Arc<Bundle>>, slices: usize) -> usize {
    match pool.iter_mut().position(|b| Arc::get_mut(b).is_some()) {
        Some(i) => {
            let bundle = pool.remove(i);
            pool.push(bundle);
        }
        None => pool.push(Arc::new(Bundle::new(slices))),
    }
    pool.len() - 1
}

impl Batcher {
    /// The slice of `e`, keyed by its field `f` ([`field_shard`], with the
    /// remainder worked out once for the usual count of slices, a power
    /// of two).
    #[inline(always)]
    pub(super) fn slice_of(&self, e: &Event, f: FieldId) -> usize {
        match (self.pow2_mask, e.fields.get(f as usize)) {
            (Some(m), Some(&Value::Int(i))) => (int_hash(i) & m) as usize,
            _ => field_shard(e, f, self.worker_of.len()),
        }
    }
}

impl Sink for Batcher {
    fn on_match(&mut self, _: &QueryInfo, _: &cep_core::Match) -> io::Result<()> {
        Ok(()) // the front runs no query
    }

    fn on_released(&mut self, e: &Event) -> io::Result<()> {
        self.route(e)
    }
}

impl Batcher {
    /// Hands `e` to each slice it is for: run at once when the slice is
    /// run here, else copied into its worker's bundle; sends the bundles
    /// when they hold enough.
    #[inline(always)]
    pub(super) fn route(&mut self, e: &Event) -> io::Result<()> {
        if let Some((f, mask)) = self.routes.single() {
            // Without a branch on each slice's mask (which mispredicts),
            // and without a mask per event.
            let j = self.slice_of(e, f);
            match self.worker_of[j] {
                HERE => match &mut self.slots[j] {
                    Slot::Here(runner, gathered) => {
                        gather(runner, gathered, &mut self.here, |b| b.push_for_all(e, mask))?;
                    }
                    Slot::Coming(held) => held.push_for_all(e, mask),
                    Slot::There(_) => unreachable!("`worker_of` follows `slots`"),
                },
                w => self.filling[w as usize].push_for_all(e, j, mask),
            }
        } else {
            self.routes.masks(e, &mut self.masks);
            for (j, (slot, &mask)) in self.slots.iter_mut().zip(&self.masks).enumerate() {
                if mask == 0 {
                    continue;
                }
                match slot {
                    Slot::There(w) => self.filling[*w].push(e, j, mask),
                    Slot::Here(runner, gathered) => gather(runner, gathered, &mut self.here, |b| b.push(e, mask))?,
                    Slot::Coming(held) => held.push(e, mask),
                }
            }
        }
        // Events run here count too: the bundles go out (with the
        // watermark, which quiet slices need for their deadlines) every
        // `BATCH` events released, wherever they ran.
        if self.len == 0 {
            self.first_at = Instant::now(); // once per batch
        }
        self.len += 1;
        self.released_ts = e.ts;
        if self.len >= BATCH {
            return self.send(e.ts);
        }
        Ok(())
    }
}

/// Adds an event (by `add`) to the events `gathered` for a slice run on
/// the calling thread, and runs them on `runner` once [`HERE_RUN`] wait.
#[inline(always)]
pub(super) fn gather(
    runner: &mut Runner,
    gathered: &mut Batch,
    sink: &mut JsonLines<Vec<u8>>,
    add: impl FnOnce(&mut Batch),
) -> io::Result<()> {
    add(gathered);
    if gathered.len >= HERE_RUN {
        run_gathered(gathered, runner, sink)?;
    }
    Ok(())
}

/// Runs the events `gathered` for a slice on its runner `runner`, and
/// empties it.
#[inline(never)]
pub(super) fn run_gathered(gathered: &mut Batch, runner: &mut Runner, sink: &mut JsonLines<Vec<u8>>) -> io::Result<()> {
    let ran = gathered.run_on(runner, sink);
    gathered.clear();
    ran.map_err(into_io)
}

impl Batcher {
    /// Runs the events every slice run here has gathered (before anything
    /// else looks at those runners: a send, a move, a checkpoint).
    pub(super) fn run_gathered(&mut self) -> io::Result<()> {
        for slot in &mut self.slots {
            if let Slot::Here(runner, gathered) = slot
                && gathered.len > 0
            {
                run_gathered(gathered, runner, &mut self.here)?;
            }
        }
        Ok(())
    }
}
