//! [`KafkaSource`]: a job's events from every partition of a topic
//! (LANGUAGE.md §9), one JSON-lines event per message (`kafka` feature).
//!
//! The job assigns itself every partition (no consumer group rebalancing:
//! DESIGN.md §2.8) and reads them from the start, or from given offsets.
//! Each partition is in event-time order as its producer wrote it, but the
//! partitions are not in step with each other; so the source merges them:
//! an event leaves only when every partition that may still send one has an
//! event waiting, and the earliest of those leaves first (ties: the lower
//! partition, then the lower offset). The watermark that follows the events
//! is therefore the minimum over the partitions, as LANGUAGE.md §9 asks,
//! and `--max-delay` and `--late` apply to the merged stream as to a file.
//! A partition with nothing to read holds the others back until it sends,
//! ends (`until_end`), or has been quiet for the idle timeout, after which
//! the merge goes on without it until it sends again.
//!
//! Events are numbered (`row`) in the order they leave, so a run over the
//! same messages gives the same rows. A message that is not an event is a
//! bad row (the job's `--on-bad-row`), named by topic, partition and offset.

use std::collections::VecDeque;
use std::io::{self, BufRead, Read};
use std::time::{Duration, Instant};

use cep_core::{Event, FieldId, Schema};
use cep_io::read::{Format, ReadErrorKind};
use cep_io::{EventSource, InputPosition, Offsets, ReadError, Reader};
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::message::Message;
use rdkafka::{Offset, TopicPartitionList};

use crate::{Error, KafkaUrl, admin};

/// How long a poll waits when the merge needs a message to go on.
const POLL: Duration = Duration::from_millis(100);

/// The default of [`SourceConfig::max_queued`]: large enough that a
/// topic whose partitions go in step never pauses (a fetch brings tens of
/// thousands of small messages of one partition), about 30 MB of events per
/// partition.
pub const MAX_QUEUED: usize = 262_144;

/// Polls without a message before [`KafkaSource::top_up`] gives up.
const TOP_UP_POLLS: u32 = 4;

/// The least time between two warnings of a broker that does not answer.
const WARN_EVERY: Duration = Duration::from_secs(5);

/// Whether the client recovers from `e` by itself (a broker away for a
/// while: it reconnects), so that the run waits rather than fails.
fn transient(e: &KafkaError) -> bool {
    use rdkafka::error::RDKafkaErrorCode as C;
    matches!(
        e.rdkafka_error_code(),
        Some(
            C::BrokerTransportFailure
                | C::AllBrokersDown
                | C::Resolve
                | C::BrokerNotAvailable
                | C::LeaderNotAvailable
                | C::NotLeaderForPartition
                | C::NetworkException
                | C::RequestTimedOut
                | C::OperationTimedOut
                | C::MessageTimedOut
        )
    )
}

/// Settings of a [`KafkaSource`].
#[derive(Clone, Debug)]
pub struct SourceConfig {
    /// Stop at the end of the topic as it was when the source opened.
    pub until_end: bool,
    /// A partition with nothing for this long stops holding the others back.
    pub idle_timeout: Option<Duration>,
    /// Bound on each wait for the broker (metadata, the first contact).
    pub timeout: Duration,
    /// The consumer group id the offsets are kept under (the partitions are
    /// assigned, not balanced: the group only names the offsets).
    pub group: String,
    /// Events a partition holds in the merge at most: past it, its
    /// fetching is paused until half are released, so that a partition
    /// that holds the others back (no idle timeout, a slow producer) bounds
    /// the memory of the ones that run ahead. Default [`MAX_QUEUED`].
    pub max_queued: usize,
}

impl SourceConfig {
    /// Reads every partition to the end when `until_end`, otherwise on and
    /// on; 10 s for the broker to answer; the group `cep-TOPIC`.
    pub fn new(url: &KafkaUrl, until_end: bool) -> SourceConfig {
        SourceConfig {
            until_end,
            idle_timeout: None,
            timeout: Duration::from_secs(10),
            group: format!("cep-{}", url.topic()),
            max_queued: MAX_QUEUED,
        }
    }
}

/// One partition's state in the merge.
#[derive(Debug)]
struct Part {
    id: i32,
    /// Events read and not yet released, with their offsets.
    queue: VecDeque<(Event, i64)>,
    /// The offset of the next message to read.
    next: i64,
    /// With `until_end`: the offset the partition ended at when the source
    /// opened (its high watermark; some brokers answer less, which the
    /// end-of-partition event corrects).
    end_at_open: i64,
    /// Read to its end (`until_end`): it sends nothing more.
    done: bool,
    /// When a message last came (for the idle timeout).
    last_message: Instant,
    /// Fetching paused: its queue is full ([`SourceConfig::max_queued`]).
    paused: bool,
}

/// The bytes of one message for the JSON-lines reader.
#[derive(Debug, Default)]
struct Feed {
    line: Vec<u8>,
    pos: usize,
}

impl Read for Feed {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = (self.line.len() - self.pos).min(buf.len());
        buf[..n].copy_from_slice(&self.line[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

impl BufRead for Feed {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        Ok(&self.line[self.pos..])
    }

    fn consume(&mut self, n: usize) {
        self.pos = (self.pos + n).min(self.line.len());
    }
}

/// Events from every partition of a Kafka topic; see the module doc.
pub struct KafkaSource {
    name: String,
    topic: String,
    consumer: BaseConsumer,
    parts: Vec<Part>,
    reader: Reader<Feed>,
    config: SourceConfig,
    /// Events released so far (the next one's row).
    released: u64,
    /// Messages consumed so far, good and bad.
    consumed: u64,
    /// A bad message read while filling the merge, to report next.
    bad: VecDeque<ReadError>,
    /// When a transient error of the client was last reported.
    warned: Option<Instant>,
    /// Events to parse the next messages into.
    spare: Vec<Event>,
    /// Times a partition's fetching was paused.
    pauses: u64,
}

impl std::fmt::Debug for KafkaSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KafkaSource").field("name", &self.name).field("parts", &self.parts).finish_non_exhaustive()
    }
}

impl KafkaSource {
    /// Opens `url`'s topic: its partitions from the broker's metadata, each
    /// assigned from `start` (partition, offset) where given and from the
    /// beginning otherwise. A broker that does not answer within
    /// `config.timeout`, or a topic it does not have, is an error.
    pub fn open(url: &KafkaUrl, config: SourceConfig, start: &[(i32, i64)]) -> Result<KafkaSource, Error> {
        let bootstrap = url.bootstrap();
        let ids = admin::partitions(&bootstrap, url.topic(), config.timeout)?;
        let consumer: BaseConsumer = ClientConfig::new()
            .set("bootstrap.servers", &bootstrap)
            .set("group.id", &config.group)
            .set("enable.auto.commit", "false")
            .set("enable.partition.eof", "true")
            .set("auto.offset.reset", "earliest")
            // librdkafka pauses a partition's fetching for a second once its
            // local queue passes `queued.min.messages`; the merge drains the
            // queues evenly, so the pause stalled every partition in turn
            // (W1 from a topic of 3 partitions: 16 s, with 5 ms: 6 s).
            .set("fetch.queue.backoff.ms", "5")
            .create()?;
        let mut tpl = TopicPartitionList::new();
        let mut parts = Vec::with_capacity(ids.len());
        for &id in &ids {
            let from = start.iter().find(|s| s.0 == id).map(|s| s.1);
            tpl.add_partition_offset(url.topic(), id, from.map_or(Offset::Beginning, Offset::Offset))?;
            let end_at_open =
                if config.until_end { consumer.fetch_watermarks(url.topic(), id, config.timeout)?.1 } else { i64::MAX };
            parts.push(Part {
                id,
                queue: VecDeque::new(),
                next: from.unwrap_or(0),
                end_at_open,
                done: false,
                last_message: Instant::now(),
                paused: false,
            });
        }
        consumer.assign(&tpl)?;
        let name = url.to_string();
        let reader = Reader::new(Feed::default(), &name, Format::Jsonl)
            .map_err(|e| Error::Client(KafkaError::ClientCreation(e.to_string())))?;
        Ok(KafkaSource {
            name,
            topic: url.topic().to_owned(),
            consumer,
            parts,
            reader,
            config,
            released: 0,
            consumed: 0,
            bad: VecDeque::new(),
            warned: None,
            spare: Vec::new(),
            pauses: 0,
        })
    }

    /// Where each partition stands: the offset of its next message not yet
    /// released as an event (what a checkpoint keeps).
    pub fn offsets(&self) -> Vec<(i32, i64)> {
        self.parts.iter().map(|p| (p.id, p.queue.front().map_or(p.next, |q| q.1))).collect()
    }

    /// How many times a partition ran so far ahead of the others that its
    /// fetching was paused ([`SourceConfig::max_queued`]).
    pub fn pauses(&self) -> u64 {
        self.pauses
    }

    /// The partition that releases next, if the merge may release now.
    fn ready(&self) -> Option<usize> {
        let now = Instant::now();
        let mut best: Option<(usize, i64)> = None;
        for (i, p) in self.parts.iter().enumerate() {
            match p.queue.front() {
                Some((e, _)) => {
                    if best.is_none_or(|(_, ts)| e.ts < ts) {
                        best = Some((i, e.ts));
                    }
                }
                None if p.done => {}
                None => {
                    let idle = self.config.idle_timeout.is_some_and(|d| now.duration_since(p.last_message) >= d);
                    if !idle {
                        return None; // it may still send an earlier event
                    }
                }
            }
        }
        best.map(|b| b.0)
    }

    /// Whether every partition is read to its end and released.
    fn ended(&self) -> bool {
        self.parts.iter().all(|p| p.done && p.queue.is_empty())
    }

    /// After partition `i` released an event: if that emptied its queue,
    /// takes what the client has already fetched, without waiting, so that
    /// the merge says it would wait only when nothing is there (on several
    /// threads each wait costs a round trip to the shards).
    fn top_up(&mut self, i: usize) -> Result<(), ReadError> {
        let mut polls = 0;
        while self.parts[i].queue.is_empty() && !self.parts[i].done && polls < TOP_UP_POLLS {
            let before = self.consumed;
            self.poll(Duration::ZERO)?;
            if self.consumed == before && self.parts[i].queue.is_empty() && !self.parts[i].done {
                polls += 1;
            }
        }
        Ok(())
    }

    /// Pauses or resumes fetching partition `i` (the client then fetches
    /// from where this source has read, [`Part::next`]).
    fn set_paused(&mut self, i: usize, pause: bool) -> Result<(), ReadError> {
        let mut tpl = TopicPartitionList::new();
        tpl.add_partition(&self.topic, self.parts[i].id);
        let done = if pause { self.consumer.pause(&tpl) } else { self.consumer.resume(&tpl) };
        done.map_err(|e| self.fatal(format!("cannot pause or resume partition {}: {e}", self.parts[i].id)))?;
        if !pause {
            // What the client had fetched past the pause is fetched again
            // from where this source stands.
            let next = self.parts[i].next;
            self.consumer.seek(&self.topic, self.parts[i].id, Offset::Offset(next), Duration::from_secs(10)).map_err(
                |e| self.fatal(format!("cannot go back to offset {next} of partition {}: {e}", self.parts[i].id)),
            )?;
        }
        self.parts[i].paused = pause;
        self.pauses += u64::from(pause);
        Ok(())
    }

    /// Polls the broker once, waiting up to `wait`, and files what comes.
    fn poll(&mut self, wait: Duration) -> Result<(), ReadError> {
        let m = match self.consumer.poll(wait) {
            None => return Ok(()),
            Some(Ok(m)) => m,
            Some(Err(KafkaError::PartitionEOF(p))) => {
                if let Some(part) = self.parts.iter_mut().find(|x| x.id == p) {
                    let at = self.consumer.position().ok().and_then(|tpl| {
                        tpl.find_partition(&self.topic, p).and_then(|e| match e.offset() {
                            Offset::Offset(o) => Some(o),
                            _ => None,
                        })
                    });
                    // At or past where the partition ended when the source
                    // opened: read to the end as it was then.
                    let at = at.unwrap_or(part.next).max(part.next);
                    part.done = self.config.until_end && at >= part.end_at_open;
                }
                return Ok(());
            }
            Some(Err(e)) if transient(&e) => {
                // The client reconnects by itself: say so, now and then.
                if self.warned.is_none_or(|at| at.elapsed() >= WARN_EVERY) {
                    eprintln!("warning: {}: {e}; the client keeps trying", self.name);
                    self.warned = Some(Instant::now());
                }
                return Ok(());
            }
            Some(Err(e)) => return Err(self.fatal(format!("reading the topic failed: {e}"))),
        };
        let (p, offset) = (m.partition(), m.offset());
        self.consumed += 1;
        let Some(i) = self.parts.iter().position(|x| x.id == p) else { return Ok(()) };
        if offset < self.parts[i].next {
            // Fetched before a pause and again after it: read already.
            return Ok(());
        }
        self.parts[i].next = offset + 1;
        self.parts[i].last_message = Instant::now();
        let mut e = self.spare.pop().unwrap_or_default();
        let parsed = parse(&mut self.reader, m.payload().unwrap_or_default(), &mut e);
        drop(m);
        match parsed {
            Ok(()) => {
                self.parts[i].queue.push_back((e, offset));
                if self.parts[i].queue.len() >= self.config.max_queued.max(2) {
                    self.set_paused(i, true)?;
                }
            }
            Err(message) => {
                self.spare.push(e);
                self.bad.push_back(ReadError {
                    file: self.name.clone(),
                    line: self.consumed,
                    row: Some(self.released),
                    message: format!("partition {p}, offset {offset}: {message}"),
                    kind: ReadErrorKind::BadRow,
                });
            }
        }
        Ok(())
    }

    fn fatal(&self, message: String) -> ReadError {
        ReadError { file: self.name.clone(), line: self.consumed, row: None, message, kind: ReadErrorKind::Fatal }
    }
}

/// One message's payload as an event in `e` (its buffers reused), or what
/// is wrong with it.
fn parse(reader: &mut Reader<Feed>, payload: &[u8], e: &mut Event) -> Result<(), String> {
    let text = payload.trim_ascii_end();
    if text.contains(&b'\n') {
        return Err("a message holds one JSON-lines event, this one has several lines".into());
    }
    let feed = reader.get_mut();
    feed.line.clear();
    feed.line.extend_from_slice(text);
    feed.line.push(b'\n');
    feed.pos = 0;
    match reader.next_event(e) {
        Ok(true) => Ok(()),
        Ok(false) => Err("an empty message".into()),
        Err(err) => Err(err.message),
    }
}

impl EventSource for KafkaSource {
    fn next_event(&mut self, event: &mut Event) -> Result<bool, ReadError> {
        loop {
            if let Some(bad) = self.bad.pop_front() {
                return Err(bad);
            }
            if let Some(i) = self.ready() {
                let (mut e, _) = self.parts[i].queue.pop_front().expect("a ready partition has an event");
                e.row = self.released;
                self.released += 1;
                // The caller's event goes back to the pool: no allocation
                // per event once the queues are warm.
                std::mem::swap(event, &mut e);
                self.spare.push(e);
                if self.parts[i].paused && self.parts[i].queue.len() <= self.config.max_queued.max(2) / 2 {
                    self.set_paused(i, false)?;
                }
                self.top_up(i)?;
                return Ok(true);
            }
            if self.ended() {
                return Ok(false);
            }
            self.poll(POLL)?;
        }
    }

    fn last_line(&self) -> u64 {
        self.consumed
    }

    fn position(&self) -> InputPosition {
        InputPosition { byte: 0, row: self.released, line: self.consumed }
    }

    fn rows(&self) -> u64 {
        self.released
    }

    fn file(&self) -> &str {
        &self.name
    }

    fn may_wait(&self) -> bool {
        true
    }

    fn would_wait(&self) -> bool {
        self.bad.is_empty() && self.ready().is_none() && !self.ended()
    }

    fn wait(&mut self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            if !self.would_wait() {
                return true;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            if let Err(e) = self.poll(left.min(POLL)) {
                // The next `next_event` reports it.
                self.bad.push_back(e);
                return true;
            }
        }
    }

    fn offsets(&self) -> Option<Offsets> {
        Some(KafkaSource::offsets(self))
    }

    /// Assigns every partition again from `offsets` (a partition it does
    /// not name: from the beginning), dropping what was read ahead, and
    /// numbers the next event `row`.
    fn resume_at(&mut self, offsets: &Offsets, row: u64) -> io::Result<bool> {
        let mut tpl = TopicPartitionList::new();
        for p in &mut self.parts {
            let from = offsets.iter().find(|o| o.0 == p.id).map_or(0, |o| o.1);
            tpl.add_partition_offset(&self.topic, p.id, Offset::Offset(from)).map_err(io::Error::other)?;
            self.spare.extend(p.queue.drain(..).map(|(e, _)| e));
            p.next = from;
            p.done = false;
            p.paused = false;
            p.last_message = Instant::now();
        }
        self.consumer.assign(&tpl).map_err(io::Error::other)?;
        self.bad.clear();
        self.released = row;
        self.consumed = row;
        Ok(true)
    }

    /// The group's committed offsets of the topic's partitions (a
    /// partition without one is left out; empty when none has one).
    fn committed_offsets(&self) -> io::Result<Option<Offsets>> {
        let parts = self.parts.iter().map(|p| p.id);
        let committed = admin::committed(&self.consumer, &self.topic, parts, self.config.timeout).map_err(|e| {
            io::Error::other(format!("cannot read the offsets committed for group {}: {e}", self.config.group))
        })?;
        Ok(Some(committed))
    }

    fn use_schema(&mut self, schema: &Schema, keep: Option<&[FieldId]>) {
        *self.reader.schema_mut() = schema.clone();
        self.reader.set_observe(false);
        let all: Vec<FieldId>;
        let keep = match keep {
            Some(k) => k,
            None => {
                all = (0..schema.field_names().count()).map(|i| i as FieldId).collect();
                &all
            }
        };
        self.reader.keep_fields(keep);
    }
}
