//! [`ShardedRunner`]: the runtime on several threads. Keys are independent,
//! so each shard thread runs every query (and the level alerts) for the
//! keys that hash to it.
//!
//! ```text
//!            front Runner (watermark, reorder buffer, late events)
//! events --> released in ts order --> route by hash(key) --> shard 0 ... shard n-1
//!                                     (batches, bounded channels)        |
//! output <------------------------------- JSON lines per batch <---------+
//! ```
//!
//! The calling thread is the reader and the emitter: [`ShardedRunner::push`]
//! hands an event to the front, routes what it releases into per-shard
//! batches, and writes whatever output the shards have sent. A batch goes to
//! its shard over a bounded channel when it is full (1,024 events), so a
//! fast producer blocks instead of growing memory. Every flush sends each
//! shard the watermark (the last released `ts`) in band, after its events,
//! so quiet shards fire their deadlines too. For each query, events go to
//! the shard of `hash(partition key) % n` (a query without a partition runs
//! on shard 0); level alerts go by the event's `key` field. The shards send
//! formatted output back over an unbounded channel (the emitter drains it
//! after every push), so they never wait on the reader: no deadlock.
//!
//! Matches are the same multiset as on one thread; their order between
//! shards is not (within a key it is).

use std::io::{self, Write};
use std::thread::JoinHandle;

use cep_core::{Event, FieldId, Timestamp, Value};
use cep_nfa::program::Program;
use crossbeam_channel::{Receiver, Sender, bounded, unbounded};

use crate::checkpoint::ShardedSnapshot;
use crate::{JsonLines, LEVELS_BIT, PushError, QueryInfo, Runner, RunnerSnapshot, RunnerStats, Sink, Summary};

/// The shard of a key among `shards`: a hash with fixed seeds, so every
/// run (and every process) puts a key on the same shard.
///
/// # Examples
/// ```
/// use cep_core::Value;
/// use cep_runtime::shard::shard_of;
/// let s = shard_of(&Value::Int(7), 4);
/// assert!(s < 4);
/// assert_eq!(shard_of(&Value::Int(7), 4), s);
/// ```
pub fn shard_of(key: &Value, shards: usize) -> usize {
    (STABLE.hash_one(key) % shards.max(1) as u64) as usize
}

/// Fixed seeds: the same key hashes alike in every run and process.
static STABLE: std::sync::LazyLock<ahash::RandomState> =
    std::sync::LazyLock::new(|| ahash::RandomState::with_seeds(0x5eed, 0xcafe, 0xf00d, 0xbeef));

/// Events per batch sent to a shard.
const BATCH: usize = 1024;
/// Batches in flight per shard before the reader waits.
const IN_FLIGHT: usize = 4;

/// What the reader sends a shard.
enum ToShard {
    /// Events (with the queries each is for), then the watermark.
    Batch(Vec<(Event, u64)>, Timestamp),
    /// A checkpoint barrier: reply with the shard's state.
    Checkpoint,
    /// A change to the shard's runner, in band (queries or alerts added
    /// or removed while events flow).
    Control(Control),
    /// The end of the input.
    Finish,
}

/// A change applied to a shard's runner between two batches.
pub type Control = Box<dyn FnOnce(&mut Runner) -> Result<(), String> + Send>;

/// What a shard sends back.
enum FromShard {
    /// Output lines.
    Out(Vec<u8>),
    /// A batch, emptied, for reuse.
    Spare(usize, Vec<(Event, u64)>),
    /// The shard has finished; its counts and statistics.
    Done(usize, Summary, RunnerStats),
    /// The shard's state at a checkpoint barrier.
    Snapshot(usize, Box<RunnerSnapshot>),
    /// The shard stopped on an error.
    Failed(String),
}

struct Shard {
    tx: Sender<ToShard>,
    /// The batch being filled: its first `len` rows are this batch's (the
    /// rest are rows of an earlier batch, reused in place).
    batch: Vec<(Event, u64)>,
    len: usize,
    /// Emptied batches, for reuse.
    spare: Vec<Vec<(Event, u64)>>,
    handle: Option<JoinHandle<()>>,
}

/// The runtime on `n` shard threads (see the [module](self) docs).
///
/// # Examples
/// ```
/// use cep_core::{Event, Schema, Sym, Value};
/// use cep_nfa::compile::{compile, Options};
/// use cep_runtime::{Runner, shard::ShardedRunner};
///
/// let q = "PATTERN SEQ(A a, B b) WHERE [k]";
/// let mut schema = Schema::new();
/// schema.field("k");
/// let runner = |schema: &mut Schema| Runner::new(compile(q, schema, &Options::default()).unwrap().programs);
/// let shards = (0..2).map(|_| runner(&mut schema.clone())).collect();
/// let mut sharded = ShardedRunner::new(Runner::new(Vec::new()), shards);
/// let mut out = Vec::new();
/// for (row, (ty, k)) in [("A", 1), ("A", 2), ("B", 1), ("B", 2)].into_iter().enumerate() {
///     let e = Event::new(Sym::new(ty), row as i64, row as u64, vec![Value::Int(k)]);
///     sharded.push(&e, &mut out).unwrap();
/// }
/// let summary = sharded.finish(&mut out).unwrap();
/// assert_eq!(summary.matches, [2]);
/// assert_eq!(String::from_utf8(out).unwrap().lines().count(), 2);
/// ```
pub struct ShardedRunner {
    front: Runner,
    routes: Routes,
    rx: Receiver<FromShard>,
    infos: Vec<QueryInfo>,
    /// Matches and fires the shards reported, and their summaries.
    done: Vec<Summary>,
    /// The shards' statistics, as they finish.
    stats: Vec<(usize, RunnerStats)>,
    /// Shard states arrived at a checkpoint barrier.
    snapshots: Vec<(usize, RunnerSnapshot)>,
    failed: Option<String>,
    /// Output bytes written so far.
    written: u64,
}

impl std::fmt::Debug for ShardedRunner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShardedRunner").field("shards", &self.routes.shards.len()).finish_non_exhaustive()
    }
}

impl ShardedRunner {
    /// A runtime whose `front` (no queries; its delay and late policy apply)
    /// orders events and whose `shards` (each with every query, and each
    /// with the level alerts of its keys) run one thread each. At most 63
    /// queries (a routing mask per event).
    ///
    /// # Panics
    /// With no shard, or more than 63 queries.
    pub fn new(mut front: Runner, shards: Vec<Runner>) -> ShardedRunner {
        assert!(!shards.is_empty(), "a sharded runtime needs a shard");
        let keys = shards[0].partition_fields();
        assert!(keys.len() < 64, "a sharded runtime runs at most 63 queries");
        let level_key = shards[0].levels_key_field();
        let infos = shards[0].queries().to_vec();
        front.forward_released();
        let (out_tx, rx) = unbounded();
        let shards: Vec<Shard> = shards
            .into_iter()
            .enumerate()
            .map(|(i, runner)| {
                let (tx, shard_rx) = bounded(IN_FLIGHT);
                let out = out_tx.clone();
                let handle = std::thread::Builder::new()
                    .name(format!("cep-shard-{i}"))
                    .spawn(move || shard_main(i, runner, shard_rx, out))
                    .expect("spawn a shard thread");
                Shard { tx, batch: Vec::with_capacity(BATCH), len: 0, spare: Vec::new(), handle: Some(handle) }
            })
            .collect();
        let masks = vec![0; shards.len()];
        ShardedRunner {
            front,
            routes: Routes { shards, keys, level_key, masks, released_ts: Timestamp::MIN, full: false },
            rx,
            written: 0,
            infos,
            done: Vec::new(),
            stats: Vec::new(),
            snapshots: Vec::new(),
            failed: None,
        }
    }

    /// The queries' names and variables.
    pub fn queries(&self) -> &[QueryInfo] {
        &self.infos
    }

    /// Output bytes written so far.
    pub fn output_bytes(&self) -> u64 {
        self.written
    }

    /// The front's watermark.
    pub fn watermark(&self) -> Timestamp {
        self.front.watermark()
    }

    /// Counts so far: events and late events from the front; matches and
    /// fires once the shards have finished.
    pub fn summary(&self) -> Summary {
        let mut s = self.front.summary().clone();
        s.matches = vec![0; self.infos.len()];
        for d in &self.done {
            for (m, n) in s.matches.iter_mut().zip(&d.matches) {
                *m += n;
            }
            s.fires += d.fires;
        }
        s
    }

    /// The number of shard threads.
    pub fn shards(&self) -> usize {
        self.routes.shards.len()
    }

    /// The front's statistics (events routed, late events, events held
    /// for reordering).
    pub fn front_stats(&self) -> RunnerStats {
        self.front.stats()
    }

    /// Each shard's statistics, in shard order, once the shards have
    /// finished (empty before [`finish`](Self::finish)).
    pub fn shard_stats(&self) -> Vec<RunnerStats> {
        let mut v = self.stats.clone();
        v.sort_by_key(|s| s.0);
        v.into_iter().map(|s| s.1).collect()
    }

    /// Processes one event: the front orders it; what it releases is routed
    /// to the shards; their output so far is written to `out`.
    pub fn push(&mut self, e: &Event, out: &mut impl Write) -> Result<(), PushError> {
        self.front.push(e, &mut self.routes)?;
        self.after_routing()?;
        self.write_output(out)
    }

    /// Moves the watermark (see [`Runner::advance_watermark`]); every shard
    /// gets it at once.
    pub fn advance_watermark(&mut self, wm: Timestamp, out: &mut impl Write) -> Result<(), PushError> {
        self.front.advance_watermark(wm, &mut self.routes)?;
        self.after_routing()?;
        self.flush_all(wm)?;
        self.write_output(out)
    }

    /// An aligned checkpoint: every event routed so far is sent, then a
    /// barrier to every shard; each shard answers with its state once it
    /// has processed everything before the barrier, and the output they
    /// sent before it is written to `out`. No event is routed meanwhile,
    /// so all states are at the same input position. With
    /// [`Runner::restore`] on the front and on shards built alike, and
    /// [`resume_released`](Self::resume_released), a new runtime continues
    /// from here.
    pub fn checkpoint(&mut self, out: &mut impl Write) -> io::Result<ShardedSnapshot> {
        let io = |e: PushError| match e {
            PushError::Io(e) => e,
            other => io::Error::other(other.to_string()),
        };
        self.flush_all(self.routes.released_ts).map_err(io)?;
        for s in &self.routes.shards {
            if s.tx.send(ToShard::Checkpoint).is_err() {
                break; // the shard stopped; its error is on the output channel
            }
        }
        while self.snapshots.len() < self.routes.shards.len() && self.failed.is_none() {
            match self.rx.recv() {
                Ok(msg) => self.take(msg, out)?,
                Err(_) => break,
            }
        }
        if let Some(why) = &self.failed {
            return Err(io::Error::other(why.clone()));
        }
        let mut snaps = std::mem::take(&mut self.snapshots);
        snaps.sort_by_key(|s| s.0);
        Ok(ShardedSnapshot {
            front: self.front.snapshot()?,
            shards: snaps.into_iter().map(|s| s.1).collect(),
            released: self.routes.released_ts,
        })
    }

    /// Applies a change to shard `shard`'s runner, in band: after every
    /// event routed so far and before any routed later. An error it returns
    /// stops the shard and reaches the caller with the next push.
    pub fn control(&mut self, shard: usize, change: Control) -> Result<(), PushError> {
        self.flush_all(self.routes.released_ts)?;
        // A shard that stopped has its error on the output channel.
        let _ = self.routes.shards[shard].tx.send(ToShard::Control(change));
        Ok(())
    }

    /// Adds a query while events flow, from one program per shard (compiled
    /// alike): it starts at the current watermark on every shard (see
    /// [`Runner::add_query`]); the shards' engine choice must run it.
    pub fn add_query(&mut self, programs: Vec<Program<Event>>) -> Result<(), String> {
        if programs.len() != self.routes.shards.len() {
            return Err(format!("{} programs for {} shards", programs.len(), self.routes.shards.len()));
        }
        if self.infos.len() >= 63 {
            return Err("a sharded runtime runs at most 63 queries".into());
        }
        let key = crate::partition_field(&programs[0]);
        let info = crate::query_info(&programs[0]);
        for (i, p) in programs.into_iter().enumerate() {
            self.control(i, Box::new(move |r: &mut Runner| r.add_query(p).map(|_| ()))).map_err(|e| e.to_string())?;
        }
        self.routes.keys.push(key);
        self.infos.push(info);
        Ok(())
    }

    /// Removes the query named `name` on every shard (see
    /// [`Runner::remove_query`]); false if there is none.
    pub fn remove_query(&mut self, name: &str) -> Result<bool, PushError> {
        let Some(i) = self.infos.iter().position(|q| q.name == name) else { return Ok(false) };
        for s in 0..self.routes.shards.len() {
            let name = name.to_owned();
            self.control(
                s,
                Box::new(move |r: &mut Runner| {
                    r.remove_query(&name);
                    Ok(())
                }),
            )?;
        }
        self.routes.keys.remove(i);
        self.infos.remove(i);
        Ok(true)
    }

    /// After restoring from a [`checkpoint`](Self::checkpoint): the `ts` of
    /// the last event routed then, which the next flush sends to the shards
    /// as their watermark.
    pub fn resume_released(&mut self, ts: Timestamp) {
        self.routes.released_ts = ts;
    }

    /// Ends the input: held events are released and routed, every shard
    /// finishes, and all output is written. Returns the run's counts.
    pub fn finish(&mut self, out: &mut impl Write) -> io::Result<Summary> {
        let io = |e: PushError| match e {
            PushError::Io(e) => e,
            other => io::Error::other(other.to_string()),
        };
        self.front.finish(&mut self.routes)?;
        self.after_routing().map_err(io)?;
        self.flush_all(self.routes.released_ts).map_err(io)?;
        for s in &self.routes.shards {
            // A shard that stopped on an error has dropped its receiver.
            let _ = s.tx.send(ToShard::Finish);
        }
        while self.done.len() < self.routes.shards.len() && self.failed.is_none() {
            match self.rx.recv() {
                Ok(msg) => self.take(msg, out)?,
                Err(_) => break,
            }
        }
        for s in &mut self.routes.shards {
            if let Some(h) = s.handle.take()
                && h.join().is_err()
            {
                self.failed.get_or_insert_with(|| "a shard thread panicked".into());
            }
        }
        self.write_output(out).map_err(io)?;
        match &self.failed {
            Some(why) => Err(io::Error::other(why.clone())),
            None => Ok(self.summary()),
        }
    }

    /// Flushes every batch when one has filled.
    fn after_routing(&mut self) -> Result<(), PushError> {
        if std::mem::take(&mut self.routes.full) { self.flush_all(self.routes.released_ts) } else { Ok(()) }
    }

    /// Sends every shard its batch (maybe empty) and the watermark.
    fn flush_all(&mut self, wm: Timestamp) -> Result<(), PushError> {
        for s in &mut self.routes.shards {
            let next = s.spare.pop().unwrap_or_else(|| Vec::with_capacity(BATCH));
            let mut batch = std::mem::replace(&mut s.batch, next);
            batch.truncate(s.len);
            s.len = 0;
            if s.tx.send(ToShard::Batch(batch, wm)).is_err() {
                // The shard stopped; its error arrives on the output channel.
                break;
            }
        }
        match &self.failed {
            Some(why) => Err(PushError::Io(io::Error::other(why.clone()))),
            None => Ok(()),
        }
    }

    /// Writes the output the shards have sent so far (without waiting).
    fn write_output(&mut self, out: &mut impl Write) -> Result<(), PushError> {
        while let Ok(msg) = self.rx.try_recv() {
            self.take(msg, out)?;
        }
        match &self.failed {
            Some(why) => Err(PushError::Io(io::Error::other(why.clone()))),
            None => Ok(()),
        }
    }

    /// Handles one message from a shard.
    fn take(&mut self, msg: FromShard, out: &mut impl Write) -> io::Result<()> {
        match msg {
            FromShard::Out(bytes) => {
                out.write_all(&bytes)?;
                self.written += bytes.len() as u64;
            }
            FromShard::Spare(i, v) => self.routes.shards[i].spare.push(v),
            FromShard::Done(i, summary, stats) => {
                self.done.push(summary);
                self.stats.push((i, stats));
            }
            FromShard::Snapshot(i, snap) => self.snapshots.push((i, *snap)),
            FromShard::Failed(why) => {
                self.failed.get_or_insert(why);
            }
        }
        Ok(())
    }
}

/// Routes each event the front releases into the batches of the shards
/// whose keys it carries, with the queries it is for.
struct Routes {
    shards: Vec<Shard>,
    /// Per query, the field its partition key is in.
    keys: Vec<Option<FieldId>>,
    /// The field level alerts are keyed by, if there are alerts.
    level_key: Option<FieldId>,
    /// Scratch: per shard, the routing mask of the event at hand.
    masks: Vec<u64>,
    /// The latest released ts: the watermark sent with the next flush.
    released_ts: Timestamp,
    /// A batch filled up: flush them all.
    full: bool,
}

impl Sink for Routes {
    fn on_match(&mut self, _: &QueryInfo, _: &cep_core::Match) -> io::Result<()> {
        Ok(()) // the front runs no query
    }

    fn on_released(&mut self, e: &Event) -> io::Result<()> {
        let n = self.shards.len();
        let field = |f: FieldId| e.fields.get(f as usize).copied().unwrap_or(Value::Null);
        self.masks.fill(0);
        for (q, key) in self.keys.iter().enumerate() {
            self.masks[key.map_or(0, |f| shard_of(&field(f), n))] |= 1 << q;
        }
        if let Some(f) = self.level_key {
            self.masks[shard_of(&field(f), n)] |= LEVELS_BIT;
        }
        for (s, &mask) in self.shards.iter_mut().zip(self.masks.iter()) {
            if mask == 0 {
                continue;
            }
            match s.batch.get_mut(s.len) {
                Some(row) => {
                    row.0.clone_from(e);
                    row.1 = mask;
                }
                None => s.batch.push((e.clone(), mask)),
            }
            s.len += 1;
            self.full |= s.len >= BATCH;
        }
        self.released_ts = e.ts;
        Ok(())
    }
}

/// A shard thread: runs its runner over the batches, sending output after
/// each.
fn shard_main(i: usize, mut runner: Runner, rx: Receiver<ToShard>, out: Sender<FromShard>) {
    let mut sink = JsonLines::new(Vec::new());
    let send_output = |sink: &mut JsonLines<Vec<u8>>| {
        let bytes = std::mem::take(sink.get_mut());
        if !bytes.is_empty() {
            let _ = out.send(FromShard::Out(bytes));
        }
    };
    while let Ok(msg) = rx.recv() {
        match msg {
            ToShard::Batch(batch, wm) => {
                for (e, mask) in &batch {
                    if let Err(err) = runner.push_for(e, *mask, &mut sink) {
                        let _ = out.send(FromShard::Failed(format!("shard {i}: {err}")));
                        return;
                    }
                }
                if wm > Timestamp::MIN
                    && let Err(err) = runner.advance_watermark(wm, &mut sink)
                {
                    let _ = out.send(FromShard::Failed(format!("shard {i}: {err}")));
                    return;
                }
                send_output(&mut sink);
                let _ = out.send(FromShard::Spare(i, batch));
            }
            ToShard::Control(change) => {
                if let Err(err) = change(&mut runner) {
                    let _ = out.send(FromShard::Failed(format!("shard {i}: {err}")));
                    return;
                }
            }
            ToShard::Checkpoint => match runner.snapshot() {
                Ok(snap) => {
                    send_output(&mut sink);
                    let _ = out.send(FromShard::Snapshot(i, Box::new(snap)));
                }
                Err(err) => {
                    let _ = out.send(FromShard::Failed(format!("shard {i}: checkpoint: {err}")));
                    return;
                }
            },
            ToShard::Finish => {
                if let Err(err) = runner.finish(&mut sink) {
                    let _ = out.send(FromShard::Failed(format!("shard {i}: {err}")));
                    return;
                }
                send_output(&mut sink);
                let _ = out.send(FromShard::Done(i, runner.summary().clone(), runner.stats()));
                return;
            }
        }
    }
}
