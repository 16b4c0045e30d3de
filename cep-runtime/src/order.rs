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
use crossbeam_channel::{Receiver, Sender, unbounded};

use crate::{QueryInfo, Sink};

/// Where a line falls in one runner's emission order (see the
/// [module](self) docs). A deadline's tie-break, the match's rows, lies in
/// the [`Lines`] the key belongs to (`rows`, `ends`), so that keeping a key
/// allocates nothing of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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
    /// At a deadline: the match's start (a deadline fires matches of many
    /// keys at once), then its rows and variable ends, where they lie in
    /// the `rows` and `ends` of its [`Lines`].
    start: Timestamp,
    rows: (usize, usize),
    ends: (usize, usize),
    /// Where its line ends in the `bytes` of its [`Lines`].
    end: usize,
}

/// The "statement" of level alerts: after every query's.
const LEVELS: usize = usize::MAX;

/// One shard's output of one step: JSON lines, with each line's key.
#[derive(Debug, Default)]
pub(crate) struct Lines {
    pub(crate) bytes: Vec<u8>,
    keys: Vec<LineKey>,
    /// The rows and variable ends of the deadlines' matches.
    rows: Vec<u64>,
    ends: Vec<u32>,
}

impl Lines {
    /// Keys the line just written, which ends at byte `end`, as a match of
    /// query `q`.
    fn key_match(&mut self, q: &QueryInfo, m: &Match, end: usize) {
        let mut key = LineKey {
            time: m.end,
            deadline: q.at_deadline,
            row: 0,
            stmt: m.query,
            start: 0,
            rows: (0, 0),
            ends: (0, 0),
            end,
        };
        if q.at_deadline {
            key.start = m.start;
            key.rows = (self.rows.len(), self.rows.len() + m.rows.len());
            key.ends = (self.ends.len(), self.ends.len() + m.ends.len());
            self.rows.extend_from_slice(&m.rows);
            self.ends.extend_from_slice(&m.ends);
        } else {
            // Rows go variable after variable, each in processing order:
            // the last is the event that completed it.
            key.row = m.rows.last().copied().unwrap_or(0);
        }
        self.keys.push(key);
    }

    /// Keys the line just written, which ends at byte `end`, as a level
    /// alert's fire.
    fn key_fire(&mut self, f: &Fire<'_>, end: usize) {
        let key = LineKey {
            time: f.ts,
            deadline: false,
            row: f.row,
            stmt: LEVELS,
            start: 0,
            rows: (0, 0),
            ends: (0, 0),
            end,
        };
        self.keys.push(key);
    }

    /// Empties it, keeping the memory.
    fn clear(&mut self) {
        self.bytes.clear();
        self.keys.clear();
        self.rows.clear();
        self.ends.clear();
    }

    /// Where line `i` of these lines lies in `bytes`.
    fn span(&self, i: usize) -> (usize, usize) {
        (if i == 0 { 0 } else { self.keys[i - 1].end }, self.keys[i].end)
    }

    /// How line `i` of these and line `j` of `other` compare in one
    /// runner's order.
    fn cmp_lines(&self, i: usize, other: &Lines, j: usize) -> Ordering {
        let (a, b) = (&self.keys[i], &other.keys[j]);
        (a.time, a.deadline, a.row, a.stmt, a.start).cmp(&(b.time, b.deadline, b.row, b.stmt, b.start)).then_with(
            || {
                cmp_rows_by_var(
                    &self.rows[a.rows.0..a.rows.1],
                    &self.ends[a.ends.0..a.ends.1],
                    &other.rows[b.rows.0..b.rows.1],
                    &other.ends[b.ends.0..b.ends.1],
                )
            },
        )
    }
}

/// A shard's sink: JSON lines, each with its [`LineKey`] once the output is
/// [ordered](KeyedLines::keep_keys).
#[derive(Debug)]
pub(crate) struct KeyedLines {
    /// The lines so far, each written straight into their bytes.
    lines: Lines,
    keyed: bool,
    /// Lines the emitter has written and sent back, to fill again.
    spare: Option<Receiver<Lines>>,
}

impl KeyedLines {
    /// Plain JSON lines, no keys.
    pub(crate) fn new() -> KeyedLines {
        KeyedLines { lines: Lines::default(), keyed: false, spare: None }
    }

    /// From now on, keeps each line's key, and fills the lines that come
    /// back on `spare` (from [`Merger::new`]) before new ones: a
    /// match-heavy step's lines and keys are megabytes, which fresh memory
    /// had to be faulted in for at every step (and the emitter to unmap).
    pub(crate) fn keep_keys(&mut self, spare: Receiver<Lines>) {
        self.keyed = true;
        self.spare = Some(spare);
    }

    /// Whether it keeps keys.
    pub(crate) fn keeps_keys(&self) -> bool {
        self.keyed
    }

    /// The lines so far (with their keys if kept), leaving it empty.
    pub(crate) fn take(&mut self) -> Lines {
        let fresh = self.spare.as_ref().and_then(|s| s.try_recv().ok()).unwrap_or_default();
        std::mem::replace(&mut self.lines, fresh)
    }

    /// Whether no line is waiting.
    pub(crate) fn is_empty(&self) -> bool {
        self.lines.bytes.is_empty()
    }
}

impl Sink for KeyedLines {
    fn on_match(&mut self, q: &QueryInfo, m: &Match) -> io::Result<()> {
        crate::match_line(&mut self.lines.bytes, q, m);
        if self.keyed {
            self.lines.key_match(q, m, self.lines.bytes.len());
        }
        Ok(())
    }

    fn on_fire(&mut self, f: &Fire<'_>) -> io::Result<()> {
        crate::fire_line(&mut self.lines.bytes, f);
        if self.keyed {
            self.lines.key_fire(f, self.lines.bytes.len());
        }
        Ok(())
    }
}

/// The emitter's side: each shard's steps, queued until every shard has
/// sent the step, then written merged in key order.
#[derive(Debug)]
pub(crate) struct Merger {
    /// Per shard, its steps not yet written, oldest first.
    queued: Vec<VecDeque<Lines>>,
    /// Per shard, where its lines go back once written (see
    /// [`KeyedLines::keep_keys`]).
    recycle: Vec<Sender<Lines>>,
    /// Scratch, per part being merged: its lines' indexes in key order.
    runs: Vec<Vec<u32>>,
    /// Scratch, per part: how many of its lines are written.
    heads: Vec<usize>,
    /// Scratch: the step being written, one `Lines` per shard.
    step: Vec<Lines>,
}

impl Merger {
    /// For `shards` shards; with each shard's end of its recycling
    /// channel, to hand to [`KeyedLines::keep_keys`].
    pub(crate) fn new(shards: usize) -> (Merger, Vec<Receiver<Lines>>) {
        let (recycle, spare): (Vec<_>, Vec<_>) = (0..shards).map(|_| unbounded()).unzip();
        let queued = (0..shards).map(|_| VecDeque::new()).collect();
        (Merger { queued, recycle, runs: Vec::new(), heads: Vec::new(), step: Vec::new() }, spare)
    }

    /// Takes shard `shard`'s next step and writes every step that every
    /// shard has now sent; returns the bytes written.
    pub(crate) fn take(&mut self, shard: usize, lines: Lines, out: &mut impl Write) -> io::Result<u64> {
        self.queued[shard].push_back(lines);
        let mut written = 0;
        while self.queued.iter().all(|q| !q.is_empty()) {
            let mut step = std::mem::take(&mut self.step);
            step.extend(self.queued.iter_mut().filter_map(VecDeque::pop_front));
            let merged = self.write_merged(&step, out);
            // Each shard's lines back to it (a shard that stopped has
            // dropped its end: they are dropped).
            for (mut lines, back) in step.drain(..).zip(&self.recycle) {
                lines.clear();
                let _ = back.send(lines);
            }
            self.step = step;
            written += merged?;
        }
        Ok(written)
    }

    /// Writes every step still queued, merged as one (a run that stopped
    /// before every shard sent its last steps); returns the bytes written.
    pub(crate) fn flush(&mut self, out: &mut impl Write) -> io::Result<u64> {
        let rest: Vec<Lines> = self.queued.iter_mut().flat_map(std::mem::take).collect();
        self.write_merged(&rest, out)
    }

    /// Writes the lines of `parts` in key order (equal keys: in the order
    /// of `parts`, then of each part's own lines); returns the bytes
    /// written. A part's lines are in key order as they come, but for
    /// deadlines fired at the step's watermark, which follow events later
    /// than them: each part is sorted if it needs to be, then the parts
    /// are merged, each run of lines that lie together in one part written
    /// at once.
    fn write_merged(&mut self, parts: &[Lines], out: &mut impl Write) -> io::Result<u64> {
        if self.runs.len() < parts.len() {
            self.runs.resize_with(parts.len(), Vec::new);
        }
        for (part, run) in parts.iter().zip(&mut self.runs) {
            run.clear();
            run.extend(0..part.keys.len() as u32);
            let sorted = (1..part.keys.len()).all(|i| part.cmp_lines(i - 1, part, i) != Ordering::Greater);
            if !sorted {
                run.sort_by(|&i, &j| part.cmp_lines(i as usize, part, j as usize).then(i.cmp(&j)));
            }
        }
        self.heads.clear();
        self.heads.resize(parts.len(), 0);
        let mut written = 0;
        let mut write = |(p, from, to): (usize, usize, usize)| {
            written += (to - from) as u64;
            out.write_all(&parts[p].bytes[from..to])
        };
        // The bytes of the lines picked last, not yet written: part, range.
        let mut pending: Option<(usize, usize, usize)> = None;
        loop {
            let mut best: Option<(usize, usize)> = None;
            for (p, part) in parts.iter().enumerate() {
                let Some(&i) = self.runs[p].get(self.heads[p]) else { continue };
                let i = i as usize;
                if best.is_none_or(|(q, j)| part.cmp_lines(i, &parts[q], j) == Ordering::Less) {
                    best = Some((p, i));
                }
            }
            let Some((p, i)) = best else { break };
            self.heads[p] += 1;
            let (start, end) = parts[p].span(i);
            pending = match pending {
                Some((q, from, to)) if q == p && to == start => Some((p, from, end)),
                Some(run) => {
                    write(run)?;
                    Some((p, start, end))
                }
                None => Some((p, start, end)),
            };
        }
        if let Some(run) = pending {
            write(run)?;
        }
        Ok(written)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cep_core::Value;

    fn info(at_deadline: bool) -> QueryInfo {
        QueryInfo { name: "q".into(), vars: vec!["a".into(), "b".into()], at_deadline, emit: vec![] }
    }

    fn m(query: usize, start: Timestamp, end: Timestamp, rows: &[u64], ends: &[u32]) -> Match {
        Match {
            query,
            key: Value::Int(1),
            start,
            end,
            rows: rows.to_vec(),
            ends: ends.to_vec(),
            emit: vec![],
            unverified: false,
        }
    }

    /// Keys sort as one runner emits: a deadline after the events at its
    /// `ts` and before later ones; events by row, then statement, then
    /// level alerts; deadlines by statement, start, then rows variable by
    /// variable (not as one flat list).
    #[test]
    fn keys_follow_one_runners_order() {
        let (ev, dl) = (info(false), info(true));
        let mut lines = Lines::default();
        for (q, m) in [
            (&ev, m(0, 1, 10, &[1, 4], &[1, 2])),
            (&ev, m(1, 1, 10, &[1, 4], &[1, 2])),
            (&ev, m(0, 2, 10, &[2, 5], &[1, 2])),
            (&dl, m(0, 3, 10, &[3, 9], &[1, 2])),
            (&dl, m(1, 1, 10, &[1, 2], &[1, 2])),
            (&dl, m(1, 2, 10, &[2], &[0, 1])),
            (&dl, m(1, 2, 10, &[2, 3], &[1, 2])),
            (&dl, m(1, 2, 10, &[2, 3], &[2, 2])),
            (&ev, m(0, 4, 11, &[7, 8], &[1, 2])),
        ] {
            lines.key_match(q, &m, 0);
        }
        for i in 1..lines.keys.len() {
            assert_eq!(
                lines.cmp_lines(i - 1, &lines, i),
                Ordering::Less,
                "{:?} before {:?}",
                lines.keys[i - 1],
                lines.keys[i]
            );
        }
    }

    /// A part whose deadlines fired at the watermark after later events is
    /// put in order first; lines of one part that stay together go out
    /// together, the same bytes.
    #[test]
    fn a_part_out_of_order_is_sorted_before_the_merge() {
        let part = |items: &[(&QueryInfo, Match, &str)]| {
            let mut lines = Lines::default();
            for (q, m, text) in items {
                lines.bytes.extend_from_slice(format!("{text}\n").as_bytes());
                let end = lines.bytes.len();
                lines.key_match(q, m, end);
            }
            lines
        };
        let (ev, dl) = (info(false), info(true));
        let a = part(&[
            (&ev, m(0, 1, 5, &[1, 2], &[1, 2]), "e5"),
            (&ev, m(0, 1, 9, &[1, 7], &[1, 2]), "e9"),
            (&dl, m(0, 1, 8, &[1, 3], &[1, 2]), "d8"),
        ]);
        let b = part(&[(&ev, m(0, 1, 6, &[1, 4], &[1, 2]), "e6"), (&dl, m(0, 0, 8, &[0, 1], &[1, 2]), "d8b")]);
        let mut out = Vec::new();
        let n = Merger::new(2).0.write_merged(&[a, b], &mut out).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "e5\ne6\nd8b\nd8\ne9\n");
        assert_eq!(n, 16);
    }

    /// Steps are written once every shard sent them, each merged by key;
    /// what is left at a stop goes out merged.
    #[test]
    fn steps_go_out_when_every_shard_sent_them() {
        let lines = |items: &[(u64, &str)]| {
            let mut sink = Lines::default();
            for (row, text) in items {
                sink.bytes.extend_from_slice(format!("{text}\n").as_bytes());
                let end = sink.bytes.len();
                sink.key_fire(
                    &Fire {
                        id: "a",
                        key: Value::Null,
                        ts: *row as i64,
                        row: *row,
                        value: Value::Null,
                        direction: cep_index::Direction::Above,
                    },
                    end,
                );
            }
            sink
        };
        let (mut merger, spare) = Merger::new(2);
        let mut out = Vec::new();
        assert_eq!(merger.take(0, lines(&[(1, "a1"), (4, "a4")]), &mut out).unwrap(), 0);
        assert_eq!(merger.take(0, lines(&[(6, "a6")]), &mut out).unwrap(), 0);
        assert!(spare[0].is_empty(), "nothing written, nothing back");
        let n = merger.take(1, lines(&[(2, "b2"), (3, "b3"), (5, "b5")]), &mut out).unwrap();
        assert_eq!(String::from_utf8(out.clone()).unwrap(), "a1\nb2\nb3\na4\nb5\n");
        assert_eq!(n, out.len() as u64);
        // The step's lines are back with their shards, empty, memory kept.
        for back in &spare {
            let lines = back.try_recv().expect("the written step's lines come back");
            assert!(lines.bytes.is_empty() && lines.keys.is_empty() && lines.bytes.capacity() > 0);
            assert!(back.is_empty());
        }
        merger.take(1, lines(&[]), &mut out).unwrap();
        assert_eq!(String::from_utf8(out.clone()).unwrap(), "a1\nb2\nb3\na4\nb5\na6\n");
        merger.take(1, lines(&[(9, "b9")]), &mut out).unwrap();
        merger.flush(&mut out).unwrap();
        assert!(String::from_utf8(out).unwrap().ends_with("a6\nb9\n"));
    }
}
