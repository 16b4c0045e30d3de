//! The stacks: an entry (an event with its link to the previous stack),
//! one element's stack (addressed by absolute index, popped from the
//! bottom), a partition's stacks, and what pops entries: the window, the
//! cap per key, and giving up a partition nothing in it could matter to.

use cep_core::{EventObject, Timestamp, Value};

use crate::buffer::object_size;
use crate::engines::api::StreamEvent;
use crate::idle;
use crate::program::Window;

use super::StackEngine;

/// One stack entry.
#[derive(Clone, Copy, Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct Entry {
    pub(super) ts: Timestamp,
    /// Position in its partition.
    pub(super) pos: u64,
    pub(super) row: u64,
    /// Absolute index of the most recent entry of the previous stack before
    /// this one (`NONE` on the first stack).
    pub(super) link: u64,
}

pub(super) const NONE: u64 = u64::MAX;

/// One element's stack. Entries are addressed by absolute index (stable
/// while old entries are popped from the bottom).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub(super) struct Stack {
    pub(super) entries: Vec<Entry>,
    /// Frame values, `width` per entry.
    pub(super) frames: Vec<Value>,
    /// Entries before this are popped (compacted away now and then).
    pub(super) start: usize,
    /// Absolute index of `entries[0]`.
    pub(super) offset: u64,
    /// The events' objects, one per entry, on the stack of an element an
    /// `EMIT x.*` item names (empty on every other stack, so a query
    /// without such an item keeps and allocates nothing for them).
    pub(super) objects: Vec<EventObject>,
    /// The bytes `objects` hold, for the state bound (recounted on
    /// restore, so not saved).
    #[serde(skip)]
    pub(super) object_bytes: usize,
}

impl Stack {
    /// Absolute index of the bottom live entry.
    pub(super) fn bottom(&self) -> u64 {
        self.offset + self.start as u64
    }

    /// One past the absolute index of the top entry.
    pub(super) fn end(&self) -> u64 {
        self.offset + self.entries.len() as u64
    }

    pub(super) fn get(&self, abs: u64) -> &Entry {
        &self.entries[(abs - self.offset) as usize]
    }

    pub(super) fn frame(&self, abs: u64, width: usize) -> &[Value] {
        let i = (abs - self.offset) as usize * width;
        &self.frames[i..i + width]
    }

    /// The object of entry `abs` (on a stack that keeps them).
    pub(super) fn object(&self, abs: u64) -> &EventObject {
        &self.objects[(abs - self.offset) as usize]
    }

    pub(super) fn push(&mut self, e: Entry, frame: &[Value]) -> u64 {
        self.entries.push(e);
        self.frames.extend_from_slice(frame);
        self.end() - 1
    }

    /// Keeps `object` for the entry just pushed.
    pub(super) fn push_object(&mut self, object: EventObject) {
        self.object_bytes += object_size(&object);
        self.objects.push(object);
        debug_assert_eq!(self.objects.len(), self.entries.len());
    }

    /// Drops the first `k` entries (popped ones) from memory.
    pub(super) fn compact(&mut self, k: usize, width: usize) {
        self.entries.drain(..k);
        self.frames.drain(..k * width);
        if !self.objects.is_empty() {
            self.object_bytes -= self.objects.drain(..k).map(|o| object_size(&o)).sum::<usize>();
        }
        self.offset += k as u64;
    }

    /// Recounts [`object_bytes`](Self::object_bytes) (after a restore).
    pub(super) fn recount_objects(&mut self) {
        self.object_bytes = self.objects.iter().map(object_size).sum();
    }

    /// Pops entries from the bottom while `old` holds.
    pub(super) fn expire(&mut self, width: usize, old: impl Fn(&Entry) -> bool) {
        while self.start < self.entries.len() && old(&self.entries[self.start]) {
            self.start += 1;
        }
        if self.start > 64 && self.start * 2 > self.entries.len() {
            self.compact(self.start, width);
            self.start = 0;
        }
    }

    pub(super) fn live(&self) -> usize {
        self.entries.len() - self.start
    }

    /// Empties the stack, keeping its capacity.
    pub(super) fn clear(&mut self) {
        self.entries.clear();
        self.frames.clear();
        self.objects.clear();
        self.object_bytes = 0;
        self.start = 0;
        self.offset = 0;
    }
}

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct Part {
    pub(super) key: Value,
    pub(super) next_pos: u64,
    pub(super) stacks: Vec<Stack>,
    /// Batch mode: accepting entries not built yet, oldest first.
    pub(super) pending: Vec<u64>,
}

/// Pops the entries no match ending now (or later) can use: older than the
/// window before the oldest waiting accepting entry, or before now.
pub(super) fn expire(part: &mut Part, window: Option<Window>, ts: Timestamp, pos: u64, width: usize) {
    let Some(window) = window else { return };
    let oldest = part.pending.first().map(|&a| *part.stacks.last().expect("an element").get(a));
    match window {
        Window::Time(w) => {
            let from = oldest.map_or(ts, |e| e.ts).saturating_sub(w);
            for s in &mut part.stacks {
                s.expire(width, |e| e.ts < from);
            }
        }
        Window::Events(n) => {
            let from = oldest.map_or(pos, |e| e.pos).saturating_sub(n);
            for s in &mut part.stacks {
                s.expire(width, |e| e.pos < from);
            }
        }
    }
}

/// Keeps each stack of a partition within `cap` entries: when one holds
/// more, entries of events more than `cap` of the key's events ago are
/// dropped, oldest first (never an accepting entry waiting for its batch).
/// Returns the number dropped.
pub(super) fn cap_entries(part: &mut Part, pos: u64, cap: u64, width: usize) -> u64 {
    if part.stacks.iter().all(|s| s.live() as u64 <= cap) {
        return 0;
    }
    let waiting = part.pending.first().map_or(u64::MAX, |&a| part.stacks.last().expect("an element").get(a).pos);
    let from = pos.saturating_sub(cap).min(waiting);
    let mut dropped = 0;
    for s in &mut part.stacks {
        let before = s.live();
        s.expire(width, |e| e.pos < from);
        dropped += (before - s.live()) as u64;
    }
    dropped
}

impl<E: StreamEvent> StackEngine<E> {
    /// A partition for `key`, which has none: a given-up one reused (its
    /// stacks emptied when it was given up), or a new one.
    #[inline(never)]
    pub(super) fn new_partition(&mut self, key: Value) -> u32 {
        let p = match self.idle.reuse() {
            Some(p) => {
                self.parts[p as usize].key = key;
                p
            }
            None => {
                let stacks = (0..self.prog.elements.len()).map(|_| Stack::default()).collect();
                self.parts.push(Part { key, next_pos: 0, stacks, pending: Vec::new() });
                (self.parts.len() - 1) as u32
            }
        };
        self.index.insert(key, p);
        p
    }

    /// Gives up every partition that nothing a later event of its key
    /// could use: no accepting entry waits for its batch, and once the
    /// window is applied at the watermark, no stack but the last holds an
    /// entry (the last stack's entries are never a predecessor). So a
    /// stream of ever new keys keeps memory in proportion to the keys
    /// within a window of their last accepted event, not to all keys seen.
    /// A key that comes back gets a fresh partition, as its first event
    /// would: positions in a partition only order its own entries. (A
    /// query without a window, or with a window in events, gives up only
    /// partitions whose first stacks are empty: its entries wait for the
    /// key's next events however long it takes.) Called before an event
    /// when the partitions in use have doubled since the last call, and
    /// are at least the first look's count ([`IdleParts`]), so it costs
    /// O(1) amortised per partition created.
    pub(super) fn drop_idle_partitions(&mut self) {
        let n = self.prog.elements.len();
        for pid in 0..self.parts.len() {
            if !self.in_use(pid) || !self.parts[pid].pending.is_empty() {
                continue;
            }
            let part = &mut self.parts[pid];
            // What the key's next event would expire (its ts is at least
            // the watermark, its position `next_pos`).
            expire(part, self.prog.window, self.watermark, part.next_pos, self.width);
            if part.stacks[..n - 1].iter().any(|s| s.live() > 0) {
                continue;
            }
            part.stacks.iter_mut().for_each(Stack::clear);
            part.next_pos = 0;
            self.index.remove(&part.key);
            self.idle.give_up(pid as u32);
        }
        self.idle.looked(self.parts.len());
    }

    /// Whether partition `pid` is not given up ([`idle::in_use`]).
    pub(super) fn in_use(&self, pid: usize) -> bool {
        idle::in_use(&self.index, &self.parts[pid].key, pid)
    }
}

/// The window bound a path's first event must meet for a match ending at a
/// given entry.
#[derive(Clone, Copy, Debug)]
pub(super) enum Bound {
    None,
    Ts(Timestamp),
    Pos(u64),
}

impl Bound {
    pub(super) fn of(window: Option<Window>, end: &Entry) -> Bound {
        match window {
            None => Bound::None,
            Some(Window::Time(w)) => Bound::Ts(end.ts.saturating_sub(w)),
            Some(Window::Events(n)) => Bound::Pos(end.pos.saturating_sub(n)),
        }
    }

    /// Whether an entry is recent enough to be (or to lead back to) a
    /// match's first event.
    pub(super) fn admits(&self, e: &Entry) -> bool {
        match *self {
            Bound::None => true,
            Bound::Ts(t) => e.ts >= t,
            Bound::Pos(p) => e.pos >= p,
        }
    }
}
