//! [`LevelIndex`]: standing alerts, indexed so that a value costs what it
//! changes, not what is registered.

use ahash::RandomState;
use cep_core::keys::KeyIndex;
use cep_core::{Timestamp, Value};
use hashbrown::HashTable;

use crate::alert::{Alert, AlertError, AlertState, Direction, Fire, Trigger, step};
use crate::order::order_key;
use crate::series::{FIRE_ROLES, REARM_ROLES, Series};

/// A field that has alerts, by number (see [`LevelIndex::field`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FieldRef(u32);

/// No edge in this place of [`Slot::pos`].
const NO_EDGE: u32 = u32::MAX;

/// A registered alert, in one cache line.
#[derive(Debug)]
#[repr(align(64))]
struct Slot {
    id: Box<str>,
    /// The trigger's numbers (`[level, level]` or `[lo, hi]`).
    nums: [f64; 2],
    band: f64,
    /// Positions of its edges in the series, by role.
    pos: [u32; 4],
    /// Its series, or `u32::MAX` for a free slot.
    series: u32,
    kind: Direction,
    armed: bool,
    /// Collected in the current update (dedup).
    mark: bool,
}

impl Slot {
    fn trigger(&self) -> Trigger {
        let [lo, hi] = self.nums;
        match self.kind {
            Direction::Above => Trigger::Above(lo),
            Direction::Below => Trigger::Below(lo),
            Direction::Enter => Trigger::Enter { lo, hi },
            Direction::Exit => Trigger::Exit { lo, hi },
        }
    }

    fn vacant() -> Slot {
        Slot {
            id: "".into(),
            nums: [0.0; 2],
            band: 0.0,
            pos: [NO_EDGE; 4],
            series: u32::MAX,
            kind: Direction::Above,
            armed: true,
            mark: false,
        }
    }
}

#[derive(Debug)]
struct Field {
    name: Box<str>,
    keys: KeyIndex,
}

/// The saved state of a [`LevelIndex`] (see [`LevelIndex::snapshot`]).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LevelSnapshot {
    /// Ids of the disarmed alerts.
    pub disarmed: Vec<String>,
    /// The last value of each (field, key) seen.
    pub last: Vec<(String, Value, f64)>,
}

/// Standing level alerts with hysteresis (LANGUAGE.md §4, plus bands: see
/// the crate docs for the exact semantics and the cost model).
///
/// # Examples
/// ```
/// use cep_core::Value;
/// use cep_index::{Alert, AlertState, LevelIndex};
///
/// let mut idx = LevelIndex::new();
/// idx.add(Alert::above("a17", Value::Int(7), "price", 10100.0, 5.0)).unwrap();
/// let price = idx.field("price").unwrap();
/// let mut fired = Vec::new();
/// for (row, p) in [10000, 10120, 10130, 10098, 10110, 10090, 10105].into_iter().enumerate() {
///     idx.update(price, Value::Int(7), Value::Int(p), row as i64, row as u64, |f| fired.push(f.row));
/// }
/// assert_eq!(fired, [1, 6]); // re-armed by 10090 (<= 10095), so 10105 crosses again
/// assert_eq!(idx.state("a17"), Some(AlertState::Disarmed));
/// ```
#[derive(Debug, Default)]
pub struct LevelIndex {
    slots: Vec<Slot>,
    free: Vec<u32>,
    ids: HashTable<u32>,
    hasher: RandomState,
    fields: Vec<Field>,
    /// Per key and field.
    series: Vec<Series>,
    /// The field and key of each series (for snapshots).
    owners: Vec<(u32, Value)>,
    /// Edges being rebuilt.
    pairs: Vec<(u64, u32)>,
    /// Edges collected by an update, then the alerts they belong to.
    scratch: Vec<u32>,
    fired: Vec<u32>,
}

impl LevelIndex {
    /// An empty index.
    pub fn new() -> LevelIndex {
        LevelIndex::default()
    }

    /// Number of alerts.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether there are no alerts.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// The fields that have (or had) alerts, with their handles.
    pub fn fields(&self) -> impl Iterator<Item = (FieldRef, &str)> {
        self.fields.iter().enumerate().map(|(i, f)| (FieldRef(i as u32), &*f.name))
    }

    /// The handle of a field that has (or had) alerts.
    pub fn field(&self, name: &str) -> Option<FieldRef> {
        self.fields.iter().position(|f| &*f.name == name).map(|i| FieldRef(i as u32))
    }

    fn find(&self, id: &str) -> Option<u32> {
        self.find_hashed(self.hasher.hash_one(id), id)
    }

    fn find_hashed(&self, h: u64, id: &str) -> Option<u32> {
        self.ids.find(h, |&s| &*self.slots[s as usize].id == id).copied()
    }

    /// The state of an alert; `None` for an unknown id.
    pub fn state(&self, id: &str) -> Option<AlertState> {
        let s = &self.slots[self.find(id)? as usize];
        Some(if s.armed { AlertState::Armed } else { AlertState::Disarmed })
    }

    /// Registers an alert, armed. It sees values from now on; its key's
    /// previous value (if the index tracked one) counts as `prev`.
    ///
    /// Cost: O(s log s) for the s edges of its key and field (the series is
    /// re-sorted); register many at once with [`add_all`](Self::add_all).
    pub fn add(&mut self, alert: Alert) -> Result<(), AlertError> {
        self.add_all([alert])
    }

    /// Registers many alerts at once, each series sorted once. All or
    /// nothing: on an error (a bad number, an id taken or repeated) none is
    /// added.
    ///
    /// # Examples
    /// ```
    /// use cep_core::Value;
    /// use cep_index::{Alert, AlertError, LevelIndex};
    /// let mut idx = LevelIndex::new();
    /// let alerts = (0..1000).map(|i| Alert::above(format!("a{i}"), Value::Int(i % 10), "price", i as f64, 1.0));
    /// idx.add_all(alerts).unwrap();
    /// assert_eq!(idx.len(), 1000);
    /// let again = idx.add_all([Alert::below("new", Value::Int(1), "price", 5.0, 0.0),
    ///                          Alert::below("a3", Value::Int(1), "price", 5.0, 0.0)]);
    /// assert_eq!(again, Err(AlertError::DuplicateId("a3".into())));
    /// assert_eq!(idx.len(), 1000);
    /// ```
    pub fn add_all(&mut self, alerts: impl IntoIterator<Item = Alert>) -> Result<(), AlertError> {
        let alerts: Vec<Alert> = alerts.into_iter().collect();
        let hashes: Vec<u64> = alerts.iter().map(|a| self.hasher.hash_one(a.id.as_str())).collect();
        let mut batch: HashTable<usize> = HashTable::with_capacity(alerts.len());
        for (i, a) in alerts.iter().enumerate() {
            a.validate()?;
            let h = hashes[i];
            if self.find_hashed(h, &a.id).is_some() || batch.find(h, |&j| alerts[j].id == a.id).is_some() {
                return Err(AlertError::DuplicateId(a.id.clone()));
            }
            batch.insert_unique(h, i, |&j| hashes[j]);
        }
        drop(batch);
        let hasher = &self.hasher;
        let slots = &self.slots;
        self.ids.reserve(alerts.len(), |&s| hasher.hash_one(&*slots[s as usize].id));
        // New edges by series, merged into each series once at the end.
        let mut pending: Vec<(u32, u64, u32)> = Vec::new();
        for (a, h) in alerts.into_iter().zip(hashes) {
            let sid = self.series_of(&a.field, a.key);
            let slot = match self.free.pop() {
                Some(s) => s,
                None => {
                    self.slots.push(Slot::vacant());
                    u32::try_from(self.slots.len() - 1).expect("fewer than 2^30 alerts")
                }
            };
            assert!(slot < 1 << 30, "an index holds fewer than 2^30 alerts");
            let (fire, nf, rearm, nr) = a.trigger.edges(a.band);
            for (i, &x) in fire[..nf].iter().enumerate() {
                pending.push((sid, order_key(x), slot << 2 | FIRE_ROLES[i]));
            }
            for (i, &x) in rearm[..nr].iter().enumerate() {
                pending.push((sid, order_key(x), slot << 2 | REARM_ROLES[i]));
            }
            let nums = match a.trigger {
                Trigger::Above(l) | Trigger::Below(l) => [l, l],
                Trigger::Enter { lo, hi } | Trigger::Exit { lo, hi } => [lo, hi],
            };
            self.slots[slot as usize] = Slot {
                id: a.id.into_boxed_str(),
                nums,
                band: a.band,
                pos: [NO_EDGE; 4],
                series: sid,
                kind: a.trigger.direction(),
                armed: true,
                mark: false,
            };
            let slots = &self.slots;
            self.ids.insert_unique(h, slot, |&s| self.hasher.hash_one(&*slots[s as usize].id));
        }
        pending.sort_unstable_by_key(|p| p.0);
        for group in pending.chunk_by(|a, b| a.0 == b.0) {
            let sid = group[0].0;
            let mut pairs = std::mem::take(&mut self.pairs);
            pairs.clear();
            self.series[sid as usize].edges_into(&mut pairs);
            pairs.extend(group.iter().map(|p| (p.1, p.2)));
            self.rebuild(sid, &mut pairs);
            self.pairs = pairs;
        }
        Ok(())
    }

    /// Removes an alert; false when there was none with this id. Cost:
    /// O(s) for the s edges of its key and field.
    pub fn remove(&mut self, id: &str) -> bool {
        let h = self.hasher.hash_one(id);
        let slots = &self.slots;
        let Ok(entry) = self.ids.find_entry(h, |&s| &*slots[s as usize].id == id) else { return false };
        let (slot, _) = entry.remove();
        let s = &mut self.slots[slot as usize];
        let sid = std::mem::replace(&mut s.series, u32::MAX);
        s.id = "".into();
        let mut pairs = std::mem::take(&mut self.pairs);
        pairs.clear();
        self.series[sid as usize].edges_into(&mut pairs);
        pairs.retain(|p| p.1 >> 2 != slot);
        self.rebuild(sid, &mut pairs);
        self.pairs = pairs;
        self.free.push(slot);
        true
    }

    /// Watches `field` without an alert on it (yet), so that it is among
    /// [`fields`](Self::fields) — e.g. for a runner that feeds the watched
    /// fields, before alerts on it are added while values flow. Returns
    /// its handle.
    ///
    /// # Examples
    /// ```
    /// use cep_index::LevelIndex;
    /// let mut idx = LevelIndex::new();
    /// let price = idx.watch("price");
    /// assert_eq!(idx.field("price"), Some(price));
    /// assert_eq!(idx.watch("price"), price);
    /// assert!(idx.is_empty());
    /// ```
    pub fn watch(&mut self, field: &str) -> FieldRef {
        match self.field(field) {
            Some(f) => f,
            None => {
                self.fields.push(Field { name: field.into(), keys: KeyIndex::default() });
                FieldRef(self.fields.len() as u32 - 1)
            }
        }
    }

    /// The series of `key` and `field`, created empty if new.
    fn series_of(&mut self, field: &str, key: Value) -> u32 {
        let f = self.watch(field);
        self.series_in(f.0, key)
    }

    #[inline]
    fn series_in(&mut self, field: u32, key: Value) -> u32 {
        let f = &mut self.fields[field as usize];
        if let Some(s) = f.keys.get(&key) {
            return s;
        }
        let s = u32::try_from(self.series.len()).ok().filter(|&s| s < u32::MAX).expect("fewer than 2^32 series");
        self.series.push(Series::default());
        self.owners.push((field, key));
        f.keys.insert(key, s);
        s
    }

    /// Gives a series the edges `pairs` (sorted here) and tells every alert
    /// of it where its edges now are.
    fn rebuild(&mut self, sid: u32, pairs: &mut [(u64, u32)]) {
        let slots = &mut self.slots;
        let series = &mut self.series[sid as usize];
        series.rebuild(pairs, |r| {
            let s = &slots[(r >> 2) as usize];
            if r & 3 < 2 { s.armed } else { !s.armed }
        });
        for (i, &(_, r)) in pairs.iter().enumerate() {
            slots[(r >> 2) as usize].pos[(r & 3) as usize] = i as u32;
        }
    }

    /// Feeds a new value of `field` for `key` (by field name; see
    /// [`update`](Self::update) for the details). A field without alerts is
    /// ignored.
    #[allow(clippy::too_many_arguments)]
    pub fn update_named(
        &mut self,
        field: &str,
        key: Value,
        value: Value,
        ts: Timestamp,
        row: u64,
        fire: impl FnMut(&Fire<'_>),
    ) {
        if let Some(f) = self.field(field) {
            self.update(f, key, value, ts, row, fire);
        }
    }

    /// Feeds a new value of `field` for `key`; calls `fire` for every alert
    /// that fires, in the order the value passes them (ascending levels when
    /// it rises, descending when it falls; alerts on the same point in the
    /// order they were added). NULL, non-numeric and NaN values are ignored
    /// (they are not a key's `prev` either).
    ///
    /// Cost: O(log d) to move the key's cursor d edges, plus O(log₆₄ s) per
    /// alert that changes state (fires or re-arms) and per band alert whose
    /// edges the value jumps over.
    pub fn update(
        &mut self,
        field: FieldRef,
        key: Value,
        value: Value,
        ts: Timestamp,
        row: u64,
        mut fire: impl FnMut(&Fire<'_>),
    ) {
        let Some(v) = value.as_f64().filter(|v| !v.is_nan()) else { return };
        let sid = self.series_in(field.0, key);
        let e = &mut self.series[sid as usize];
        let kv = order_key(v);
        let Some(prev) = e.step_to(v, kv) else { return };
        let (start, end, falling) = e.range(prev, kv);
        // Collect the live edges in the range, in the order the value passes them.
        let edges = &mut self.scratch;
        edges.clear();
        let mut i = start;
        while let Some(x) = e.next_live(i, end) {
            edges.push(x as u32);
            i = x + 1;
        }
        if falling {
            edges.reverse();
            // Keep alerts on one point in the order they were added.
            let keys = e.keys();
            let mut a = 0;
            while a < edges.len() {
                let k = keys[edges[a] as usize];
                let b = a + edges[a..].iter().take_while(|&&x| keys[x as usize] == k).count();
                edges[a..b].reverse();
                a = b;
            }
        }
        // Each alert once (by its first edge), then its state machine.
        let slots = &mut self.slots;
        let mut n = 0;
        for j in 0..edges.len() {
            let slot = e.reference(edges[j] as usize) >> 2;
            let a = &mut slots[slot as usize];
            if !a.mark {
                a.mark = true;
                edges[n] = slot;
                n += 1;
            }
        }
        edges.truncate(n);
        self.fired.clear();
        for &slot in edges.iter() {
            let a = &mut slots[slot as usize];
            a.mark = false;
            let (armed, fired) = step(a.trigger(), a.band, a.armed, Some(prev), v);
            if armed != a.armed {
                a.armed = armed;
                for (role, &p) in a.pos.iter().enumerate() {
                    if p == NO_EDGE {
                        continue;
                    }
                    e.set_live(p as usize, if role < 2 { armed } else { !armed });
                }
            }
            if fired {
                self.fired.push(slot);
            }
        }
        e.settle();
        for &slot in &self.fired {
            let a = &slots[slot as usize];
            fire(&Fire { id: &a.id, key, ts, row, value, direction: a.kind });
        }
    }

    /// The index's changing state, for a checkpoint: which alerts are
    /// disarmed, and the last value of every key and field. The alerts
    /// themselves are not in it: restore into an index with the same alerts.
    ///
    /// # Examples
    /// ```
    /// use cep_core::Value;
    /// use cep_index::{Alert, AlertState, LevelIndex};
    ///
    /// let index = || {
    ///     let mut idx = LevelIndex::new();
    ///     idx.add(Alert::above("a17", Value::Int(7), "price", 100.0, 5.0)).unwrap();
    ///     idx
    /// };
    /// let mut idx = index();
    /// let price = idx.field("price").unwrap();
    /// idx.update(price, Value::Int(7), Value::Int(90), 0, 0, |_| {});
    /// idx.update(price, Value::Int(7), Value::Int(120), 1, 1, |_| {}); // fires, disarms
    ///
    /// let mut resumed = index();
    /// resumed.restore(idx.snapshot()).unwrap();
    /// assert_eq!(resumed.state("a17"), Some(AlertState::Disarmed));
    /// let mut fired = 0;
    /// resumed.update(price, Value::Int(7), Value::Int(94), 2, 2, |_| fired += 1); // re-arms
    /// resumed.update(price, Value::Int(7), Value::Int(101), 3, 3, |_| fired += 1); // fires again
    /// assert_eq!(fired, 1);
    /// ```
    pub fn snapshot(&self) -> LevelSnapshot {
        let disarmed =
            self.slots.iter().filter(|s| s.series != u32::MAX && !s.armed).map(|s| s.id.to_string()).collect();
        let last = self
            .series
            .iter()
            .zip(&self.owners)
            .filter(|(s, _)| !s.last.is_nan())
            .map(|(s, &(f, key))| (self.fields[f as usize].name.to_string(), key, s.last))
            .collect();
        LevelSnapshot { disarmed, last }
    }

    /// Restores a [`snapshot`](Self::snapshot) into an index holding the
    /// same alerts (all armed, no values seen). An error names an alert or
    /// field the index lacks.
    pub fn restore(&mut self, snap: LevelSnapshot) -> Result<(), RestoreError> {
        for id in &snap.disarmed {
            let slot =
                self.find(id).ok_or_else(|| RestoreError { kind: RestoreErrorKind::UnknownAlert(id.clone()) })?;
            self.slots[slot as usize].armed = false;
        }
        for (field, key, last) in snap.last {
            let f = self
                .field(&field)
                .ok_or_else(|| RestoreError { kind: RestoreErrorKind::UnwatchedField(field.clone()) })?;
            let sid = self.series_in(f.0, key);
            self.series[sid as usize].last = last;
        }
        let mut pairs = std::mem::take(&mut self.pairs);
        for sid in 0..self.series.len() as u32 {
            pairs.clear();
            self.series[sid as usize].edges_into(&mut pairs);
            self.rebuild(sid, &mut pairs);
        }
        self.pairs = pairs;
        Ok(())
    }

    /// Approximate heap bytes held (alerts, ids, edges, keys), for
    /// "bytes per standing alert".
    pub fn heap_bytes(&self) -> usize {
        let slots = self.slots.capacity() * std::mem::size_of::<Slot>()
            + self.slots.iter().map(|s| s.id.len()).sum::<usize>()
            + self.free.capacity() * 4;
        let ids = self.ids.capacity() * 5;
        let series = self.series.capacity() * std::mem::size_of::<Series>()
            + self.series.iter().map(Series::heap_bytes).sum::<usize>();
        let keys = self.fields.iter().map(|f| f.keys.heap_bytes()).sum::<usize>();
        slots + ids + series + keys
    }
}

/// Why [`LevelIndex::restore`] refused a saved state: it names an alert or
/// a field this index does not have, so it was taken from an index with
/// other alerts. Its text is the one `cep run` prints on a failed resume.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RestoreError {
    kind: RestoreErrorKind,
}

/// What a [`RestoreError`] is about; private, so that new cases can be
/// added without breaking callers, who read it through the accessors.
#[derive(Clone, Debug, PartialEq, Eq)]
enum RestoreErrorKind {
    UnknownAlert(String),
    UnwatchedField(String),
}

impl RestoreError {
    /// The id of the saved alert this index lacks, if that is the error.
    pub fn unknown_alert(&self) -> Option<&str> {
        match &self.kind {
            RestoreErrorKind::UnknownAlert(id) => Some(id),
            RestoreErrorKind::UnwatchedField(_) => None,
        }
    }

    /// The saved field no alert of this index watches, if that is the error.
    pub fn unwatched_field(&self) -> Option<&str> {
        match &self.kind {
            RestoreErrorKind::UnwatchedField(field) => Some(field),
            RestoreErrorKind::UnknownAlert(_) => None,
        }
    }
}

impl std::fmt::Display for RestoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.kind {
            RestoreErrorKind::UnknownAlert(id) => write!(f, "the saved state names an unknown level alert `{id}`"),
            RestoreErrorKind::UnwatchedField(field) => write!(f, "the saved state names an unwatched field `{field}`"),
        }
    }
}

impl std::error::Error for RestoreError {}
