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
use crossbeam_channel::{Receiver, Sender, bounded, unbounded};

use crate::{JsonLines, LEVELS_BIT, PushError, QueryInfo, Runner, Summary};

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
    (stable_hasher().hash_one(key) % shards.max(1) as u64) as usize
}

fn stable_hasher() -> ahash::RandomState {
    ahash::RandomState::with_seeds(0x5eed, 0xcafe, 0xf00d, 0xbeef)
}

/// Events per batch sent to a shard.
const BATCH: usize = 1024;
/// Batches in flight per shard before the reader waits.
const IN_FLIGHT: usize = 4;

/// What the reader sends a shard.
enum ToShard {
    /// Events (with the queries each is for), then the watermark.
    Batch(Vec<(Event, u64)>, Timestamp),
    /// The end of the input.
    Finish,
}

/// What a shard sends back.
enum FromShard {
    /// Output lines.
    Out(Vec<u8>),
    /// A batch, emptied, for reuse.
    Spare(usize, Vec<(Event, u64)>),
    /// The shard has finished; its counts.
    Done(Summary),
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
    shards: Vec<Shard>,
    rx: Receiver<FromShard>,
    /// Per query, the field its partition key is in.
    keys: Vec<Option<FieldId>>,
    /// The field level alerts are keyed by, if there are alerts.
    level_key: Option<FieldId>,
    hasher: ahash::RandomState,
    infos: Vec<QueryInfo>,
    /// The latest released ts: the watermark sent with the next flush.
    released_ts: Timestamp,
    /// Matches and fires the shards reported, and their summaries.
    done: Vec<Summary>,
    failed: Option<String>,
    /// Output bytes written so far.
    written: u64,
}

impl std::fmt::Debug for ShardedRunner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShardedRunner").field("shards", &self.shards.len()).finish_non_exhaustive()
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
        front.collect_released();
        let (out_tx, rx) = unbounded();
        let shards = shards
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
        ShardedRunner {
            front,
            shards,
            rx,
            keys,
            level_key,
            hasher: stable_hasher(),
            written: 0,
            infos,
            released_ts: Timestamp::MIN,
            done: Vec::new(),
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

    /// Processes one event: the front orders it; what it releases is routed
    /// to the shards; their output so far is written to `out`.
    pub fn push(&mut self, e: &Event, out: &mut impl Write) -> Result<(), PushError> {
        let mut front_sink = |_: &QueryInfo, _: &cep_core::Match| {};
        self.front.push(e, &mut front_sink)?;
        self.route_released()?;
        self.write_output(out)
    }

    /// Moves the watermark (see [`Runner::advance_watermark`]); every shard
    /// gets it at once.
    pub fn advance_watermark(&mut self, wm: Timestamp, out: &mut impl Write) -> Result<(), PushError> {
        let mut front_sink = |_: &QueryInfo, _: &cep_core::Match| {};
        self.front.advance_watermark(wm, &mut front_sink)?;
        self.route_released()?;
        self.flush_all(wm)?;
        self.write_output(out)
    }

    /// Ends the input: held events are released and routed, every shard
    /// finishes, and all output is written. Returns the run's counts.
    pub fn finish(&mut self, out: &mut impl Write) -> io::Result<Summary> {
        let io = |e: PushError| match e {
            PushError::Io(e) => e,
            other => io::Error::other(other.to_string()),
        };
        let mut front_sink = |_: &QueryInfo, _: &cep_core::Match| {};
        self.front.finish(&mut front_sink)?;
        self.route_released().map_err(io)?;
        self.flush_all(self.released_ts).map_err(io)?;
        for s in &self.shards {
            // A shard that stopped on an error has dropped its receiver.
            let _ = s.tx.send(ToShard::Finish);
        }
        while self.done.len() < self.shards.len() && self.failed.is_none() {
            match self.rx.recv() {
                Ok(msg) => self.take(msg, out)?,
                Err(_) => break,
            }
        }
        for s in &mut self.shards {
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

    /// Routes the events the front has released.
    fn route_released(&mut self) -> Result<(), PushError> {
        let mut full = false;
        let (keys, level_key, hasher, n) = (&self.keys, self.level_key, &self.hasher, self.shards.len());
        let shards = &mut self.shards;
        let mut last = self.released_ts;
        self.front.drain_released(|e| {
            let shard_of = |v: Value| (hasher.hash_one(v) % n as u64) as usize;
            let field = |f: FieldId| e.fields.get(f as usize).copied().unwrap_or(Value::Null);
            let mut masks = [0u64; 64];
            let masks = &mut masks[..n.min(64)];
            for (q, key) in keys.iter().enumerate() {
                let s = key.map_or(0, |f| shard_of(field(f)));
                masks[s % masks.len()] |= 1 << q;
            }
            if let Some(f) = level_key {
                masks[shard_of(field(f)) % masks.len()] |= LEVELS_BIT;
            }
            for (s, &mask) in shards.iter_mut().zip(masks.iter()) {
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
                full |= s.len >= BATCH;
            }
            last = e.ts;
        });
        self.released_ts = last;
        if full { self.flush_all(last) } else { Ok(()) }
    }

    /// Sends every shard its batch (maybe empty) and the watermark.
    fn flush_all(&mut self, wm: Timestamp) -> Result<(), PushError> {
        for s in &mut self.shards {
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
            FromShard::Spare(i, v) => self.shards[i].spare.push(v),
            FromShard::Done(summary) => self.done.push(summary),
            FromShard::Failed(why) => {
                self.failed.get_or_insert(why);
            }
        }
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
            ToShard::Finish => {
                if let Err(err) = runner.finish(&mut sink) {
                    let _ = out.send(FromShard::Failed(format!("shard {i}: {err}")));
                    return;
                }
                send_output(&mut sink);
                let _ = out.send(FromShard::Done(runner.summary().clone()));
                return;
            }
        }
    }
}
