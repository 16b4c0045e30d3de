//! One runner's emission order, rebuilt from the output of several shards
//! ([`ShardedRunner::set_ordered_output`](crate::shard::ShardedRunner::set_ordered_output)).
//!
//! One [`Runner`](crate::Runner) emits in processing order: at each event,
//! first the matches whose deadline (a trailing `NOT … WITHIN`) the event's
//! `ts` passed, in order of deadline, then start, then rows variable by
//! variable (statements merged by deadline, ties in statement order); then
//! the matches the event completed, statement by statement; then the level
//! alerts it fired. That order is a function of each line's own match or
//! fire, so a shard can give each line its place without seeing the other
//! shards' events ([`LineKey`]):
//!
//! - a match completed by an event: `(end, event, row of its last event,
//!   statement)` — `end` is that event's `ts`, and the event is the last
//!   one the match binds;
//! - a match made final by a deadline passing: `(end, deadline, statement,
//!   start, rows)` — `end` is the deadline, which fires after every event
//!   with `ts <= end` and before the first with a larger one;
//! - a level alert: `(ts, event, row, after every statement)`.
//!
//! Lines with the same key come from one event and one statement, so from
//! one shard, in that shard's (that is, one runner's) order.
//!
//! Every shard gets every batch, in the same order, each batch with the
//! watermark (the last `ts` released), and answers each with its lines of
//! that *step*. Everything a later step emits sorts after everything an
//! earlier one did: its events come after (in `ts`, then row), and the
//! deadlines it fires are at or after the watermark, which every deadline
//! fired before was below. So the emitter ([`Merger`]) writes a step once
//! every shard has sent it, its lines sorted by key, and holds nothing
//! longer than the slowest shard takes to run the step.

use std::cmp::Ordering;
use std::collections::VecDeque;
use std::io::{self, Write};

use cep_core::{Match, Timestamp, cmp_rows_by_var};
use cep_index::Fire;

use crate::{JsonLines, QueryInfo, Sink};

/// Where a line falls in one runner's emission order (see the
/// [module](self) docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct LineKey {
    /// The match's `end` (its last event's `ts`, or its deadline), or the
    /// fire's `ts`.
    time: Timestamp,
    /// Made final by a deadline passing (after the events at `time`).
    deadline: bool,
    /// At an event: its row.
    row: u64,
    /// The statement's index ([`LEVELS`] for a level alert).
    stmt: usize,
    /// At a deadline: the match's start and rows (a deadline fires matches
    /// of many keys at once).
    start: Timestamp,
    rows: Vec<u64>,
    ends: Vec<u32>,
}

/// The "statement" of level alerts: after every query's.
const LEVELS: usize = usize::MAX;

impl LineKey {
    /// The key of a match of query `q`.
    pub(crate) fn of_match(q: &QueryInfo, m: &Match) -> LineKey {
        let key = LineKey {
            time: m.end,
            deadline: q.at_deadline,
            row: 0,
            stmt: m.query,
            start: 0,
            rows: Vec::new(),
            ends: Vec::new(),
        };
        if q.at_deadline {
            LineKey { start: m.start, rows: m.rows.clone(), ends: m.ends.clone(), ..key }
        } else {
            // Rows go variable after variable, each in processing order:
            // the last is the event that completed it.
            LineKey { row: m.rows.last().copied().unwrap_or(0), ..key }
        }
    }

    /// The key of a level alert's fire.
    pub(crate) fn of_fire(f: &Fire<'_>) -> LineKey {
        LineKey { time: f.ts, deadline: false, row: f.row, stmt: LEVELS, start: 0, rows: Vec::new(), ends: Vec::new() }
    }
}

impl Ord for LineKey {
    fn cmp(&self, other: &LineKey) -> Ordering {
        (self.time, self.deadline, self.row, self.stmt, self.start)
            .cmp(&(other.time, other.deadline, other.row, other.stmt, other.start))
            .then_with(|| cmp_rows_by_var(&self.rows, &self.ends, &other.rows, &other.ends))
    }
}

impl PartialOrd for LineKey {
    fn partial_cmp(&self, other: &LineKey) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// One shard's output of one step: JSON lines and, per line, its key and
/// where it ends in `bytes`.
#[derive(Debug, Default)]
pub(crate) struct Lines {
    pub(crate) bytes: Vec<u8>,
    pub(crate) keys: Vec<(LineKey, usize)>,
}

/// A shard's sink: JSON lines, each with its [`LineKey`] once the output is
/// [ordered](KeyedLines::keep_keys).
#[derive(Debug)]
pub(crate) struct KeyedLines {
    json: JsonLines<Vec<u8>>,
    keys: Option<Vec<(LineKey, usize)>>,
}

impl KeyedLines {
    /// Plain JSON lines, no keys.
    pub(crate) fn new() -> KeyedLines {
        KeyedLines { json: JsonLines::new(Vec::new()), keys: None }
    }

    /// From now on, keeps each line's key.
    pub(crate) fn keep_keys(&mut self) {
        self.keys.get_or_insert_with(Vec::new);
    }

    /// Whether it keeps keys.
    pub(crate) fn keeps_keys(&self) -> bool {
        self.keys.is_some()
    }

    /// The lines so far (with their keys if kept), leaving it empty.
    pub(crate) fn take(&mut self) -> Lines {
        Lines {
            bytes: std::mem::take(self.json.get_mut()),
            keys: self.keys.as_mut().map(std::mem::take).unwrap_or_default(),
        }
    }

    /// Whether no line is waiting.
    pub(crate) fn is_empty(&mut self) -> bool {
        self.json.get_mut().is_empty()
    }

    fn keyed(&mut self, key: impl FnOnce() -> LineKey) {
        if let Some(keys) = &mut self.keys {
            keys.push((key(), self.json.get_mut().len()));
        }
    }
}

impl Sink for KeyedLines {
    fn on_match(&mut self, q: &QueryInfo, m: &Match) -> io::Result<()> {
        self.json.on_match(q, m)?;
        self.keyed(|| LineKey::of_match(q, m));
        Ok(())
    }

    fn on_fire(&mut self, f: &Fire<'_>) -> io::Result<()> {
        self.json.on_fire(f)?;
        self.keyed(|| LineKey::of_fire(f));
        Ok(())
    }
}

/// The emitter's side: each shard's steps, queued until every shard has
/// sent the step, then written merged in key order.
#[derive(Debug)]
pub(crate) struct Merger {
    /// Per shard, its steps not yet written, oldest first.
    queued: Vec<VecDeque<Lines>>,
}

impl Merger {
    /// For `shards` shards.
    pub(crate) fn new(shards: usize) -> Merger {
        Merger { queued: (0..shards).map(|_| VecDeque::new()).collect() }
    }

    /// Takes shard `shard`'s next step and writes every step that every
    /// shard has now sent; returns the bytes written.
    pub(crate) fn take(&mut self, shard: usize, lines: Lines, out: &mut impl Write) -> io::Result<u64> {
        self.queued[shard].push_back(lines);
        let mut written = 0;
        while self.queued.iter().all(|q| !q.is_empty()) {
            let step: Vec<Lines> = self.queued.iter_mut().filter_map(VecDeque::pop_front).collect();
            written += write_merged(&step, out)?;
        }
        Ok(written)
    }

    /// Writes every step still queued, merged as one (a run that stopped
    /// before every shard sent its last steps); returns the bytes written.
    pub(crate) fn flush(&mut self, out: &mut impl Write) -> io::Result<u64> {
        let rest: Vec<Lines> = self.queued.iter_mut().flat_map(std::mem::take).collect();
        write_merged(&rest, out)
    }
}

/// Writes the lines of `parts` in key order (equal keys: in the order of
/// `parts`, then of each part's own lines); returns the bytes written.
fn write_merged(parts: &[Lines], out: &mut impl Write) -> io::Result<u64> {
    let mut lines: Vec<(&LineKey, usize, usize)> = Vec::new();
    for (p, part) in parts.iter().enumerate() {
        lines.extend(part.keys.iter().enumerate().map(|(i, (key, _))| (key, p, i)));
    }
    lines.sort_by(|a, b| a.0.cmp(b.0).then((a.1, a.2).cmp(&(b.1, b.2))));
    let mut written = 0;
    for (_, p, i) in lines {
        let part = &parts[p];
        let start = if i == 0 { 0 } else { part.keys[i - 1].1 };
        let line = &part.bytes[start..part.keys[i].1];
        out.write_all(line)?;
        written += line.len() as u64;
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cep_core::Value;

    fn info(at_deadline: bool) -> QueryInfo {
        QueryInfo { name: "q".into(), vars: vec!["a".into(), "b".into()], at_deadline }
    }

    fn m(query: usize, start: Timestamp, end: Timestamp, rows: &[u64], ends: &[u32]) -> Match {
        Match { query, key: Value::Int(1), start, end, rows: rows.to_vec(), ends: ends.to_vec() }
    }

    /// Keys sort as one runner emits: a deadline after the events at its
    /// `ts` and before later ones; events by row, then statement, then
    /// level alerts; deadlines by statement, start, then rows variable by
    /// variable (not as one flat list).
    #[test]
    fn keys_follow_one_runners_order() {
        let (ev, dl) = (info(false), info(true));
        let in_order = [
            LineKey::of_match(&ev, &m(0, 1, 10, &[1, 4], &[1, 2])),
            LineKey::of_match(&ev, &m(1, 1, 10, &[1, 4], &[1, 2])),
            LineKey::of_match(&ev, &m(0, 2, 10, &[2, 5], &[1, 2])),
            LineKey::of_match(&dl, &m(0, 3, 10, &[3, 9], &[1, 2])),
            LineKey::of_match(&dl, &m(1, 1, 10, &[1, 2], &[1, 2])),
            LineKey::of_match(&dl, &m(1, 2, 10, &[2], &[0, 1])),
            LineKey::of_match(&dl, &m(1, 2, 10, &[2, 3], &[1, 2])),
            LineKey::of_match(&dl, &m(1, 2, 10, &[2, 3], &[2, 2])),
            LineKey::of_match(&ev, &m(0, 4, 11, &[7, 8], &[1, 2])),
        ];
        for w in in_order.windows(2) {
            assert!(w[0] < w[1], "{:?} before {:?}", w[0], w[1]);
        }
    }

    /// Steps are written once every shard sent them, each merged by key;
    /// what is left at a stop goes out merged.
    #[test]
    fn steps_go_out_when_every_shard_sent_them() {
        let lines = |items: &[(u64, &str)]| {
            let mut sink = Lines::default();
            for (row, text) in items {
                sink.bytes.extend_from_slice(format!("{text}\n").as_bytes());
                let key = LineKey::of_fire(&Fire {
                    id: "a",
                    key: Value::Null,
                    ts: *row as i64,
                    row: *row,
                    value: Value::Null,
                    direction: cep_index::Direction::Above,
                });
                sink.keys.push((key, sink.bytes.len()));
            }
            sink
        };
        let mut merger = Merger::new(2);
        let mut out = Vec::new();
        assert_eq!(merger.take(0, lines(&[(1, "a1"), (4, "a4")]), &mut out).unwrap(), 0);
        assert_eq!(merger.take(0, lines(&[(6, "a6")]), &mut out).unwrap(), 0);
        let n = merger.take(1, lines(&[(2, "b2"), (3, "b3"), (5, "b5")]), &mut out).unwrap();
        assert_eq!(String::from_utf8(out.clone()).unwrap(), "a1\nb2\nb3\na4\nb5\n");
        assert_eq!(n, out.len() as u64);
        merger.take(1, lines(&[]), &mut out).unwrap();
        assert_eq!(String::from_utf8(out.clone()).unwrap(), "a1\nb2\nb3\na4\nb5\na6\n");
        merger.take(1, lines(&[(9, "b9")]), &mut out).unwrap();
        merger.flush(&mut out).unwrap();
        assert!(String::from_utf8(out).unwrap().ends_with("a6\nb9\n"));
    }
}
