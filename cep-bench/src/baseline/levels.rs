//! The level-alert baseline of DESIGN.md §2.6: per key and field, the armed
//! alerts in a `BTreeMap` ordered by level and the disarmed ones in a
//! `BTreeMap` ordered by re-arm level (one pair per direction).
//!
//! Semantics are LANGUAGE.md §4, exactly as [`cep_index::LevelIndex`]
//! implements them: for each new value `v` of a key's field, with `prev`
//! the key's previous value, first the disarmed alerts whose re-arm level
//! `v` reached are armed again (`above`: `v <= level - band`; `below`:
//! `v >= level + band`), then the armed alerts between `prev` and `v` fire
//! (`above`: `prev < level <= v`; `below`: `prev > level >= v`) and are
//! disarmed. The first value of a key never fires; NULL and non-numeric
//! values are ignored. Cost per value: O(log q + f) for q alerts on the
//! key and f that fire or re-arm, instead of the O(q) scan.
//!
//! Fires of one value come in ascending level order (`above` before
//! `below`); `LevelIndex` gives them in the order the alerts were added, so
//! compare the two as sets per value.
//!
//! Levels are `f64` keys in a total-order wrapper (`-0.0` is stored as
//! `0.0`, so the order agrees with `<=` on every non-NaN value).

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::ops::Bound::{Excluded, Included, Unbounded};

use ahash::AHashMap;
use cep_core::{Timestamp, Value};
use cep_index::{Alert, AlertError, Direction, Fire, Trigger};

/// An `f64` with a total order (via `total_cmp`), `-0.0` normalised to `0.0`.
#[derive(Clone, Copy, Debug)]
struct Level(f64);

impl Level {
    fn new(x: f64) -> Level {
        Level(x + 0.0)
    }
}

impl PartialEq for Level {
    fn eq(&self, other: &Level) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Level {}

impl PartialOrd for Level {
    fn partial_cmp(&self, other: &Level) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Level {
    fn cmp(&self, other: &Level) -> Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// Map key: the level (or re-arm level) and the alert's slot (ties).
type At = (Level, u32);

#[derive(Debug, Default)]
struct Maps {
    armed: BTreeMap<At, ()>,
    disarmed: BTreeMap<At, ()>,
}

#[derive(Debug)]
struct Series {
    field: Box<str>,
    last: Option<f64>,
    above: Maps,
    below: Maps,
}

#[derive(Debug)]
struct Entry {
    alert: Alert,
    armed: bool,
}

impl Entry {
    fn level(&self) -> f64 {
        match self.alert.trigger {
            Trigger::Above(l) | Trigger::Below(l) => l,
            Trigger::Enter { .. } | Trigger::Exit { .. } => unreachable!("refused by add"),
        }
    }

    fn rearm_level(&self) -> f64 {
        match self.alert.trigger {
            Trigger::Above(l) => l - self.alert.band,
            Trigger::Below(l) => l + self.alert.band,
            Trigger::Enter { .. } | Trigger::Exit { .. } => unreachable!("refused by add"),
        }
    }
}

/// Level alerts with hysteresis in two `BTreeMap`s per key, field and
/// direction.
///
/// # Examples
/// ```
/// use cep_bench::baseline::levels::TwoBTreeMaps;
/// use cep_core::Value;
/// use cep_index::Alert;
/// let mut idx = TwoBTreeMaps::new();
/// idx.add(Alert::above("a", Value::Int(1), "price", 10100.0, 5.0)).unwrap();
/// let mut fired = Vec::new();
/// for (row, v) in [10000, 10120, 10130, 10098, 10110, 10090, 10105].into_iter().enumerate() {
///     idx.update(Value::Int(1), "price", Value::Int(v), row as i64, row as u64, |f| fired.push(f.row));
/// }
/// assert_eq!(fired, [1, 6]);
/// ```
#[derive(Debug, Default)]
pub struct TwoBTreeMaps {
    alerts: Vec<Option<Entry>>,
    by_id: AHashMap<String, u32>,
    series: AHashMap<Value, Vec<Series>>,
    scratch: Vec<At>,
}

impl TwoBTreeMaps {
    /// An empty index.
    pub fn new() -> TwoBTreeMaps {
        TwoBTreeMaps::default()
    }

    fn series_mut<'a>(series: &'a mut AHashMap<Value, Vec<Series>>, key: Value, field: &str) -> &'a mut Series {
        let fields = series.entry(key).or_default();
        let i = match fields.iter().position(|s| &*s.field == field) {
            Some(i) => i,
            None => {
                fields.push(Series { field: field.into(), last: None, above: Maps::default(), below: Maps::default() });
                fields.len() - 1
            }
        };
        &mut fields[i]
    }

    /// Registers an alert, armed (`above` and `below` only: the baseline of
    /// DESIGN.md §2.6 has no band alerts).
    pub fn add(&mut self, alert: Alert) -> Result<(), AlertError> {
        if self.by_id.contains_key(&alert.id) {
            return Err(AlertError::DuplicateId(alert.id));
        }
        alert.validate()?;
        let (Trigger::Above(level) | Trigger::Below(level)) = alert.trigger else {
            return Err(AlertError::BadNumber(format!("alert `{}`: the baseline has no band alerts", alert.id)));
        };
        let slot = u32::try_from(self.alerts.len()).expect("more than 4 billion alerts");
        let s = Self::series_mut(&mut self.series, alert.key, &alert.field);
        let maps = if alert.trigger.direction() == Direction::Above { &mut s.above } else { &mut s.below };
        maps.armed.insert((Level::new(level), slot), ());
        self.by_id.insert(alert.id.clone(), slot);
        self.alerts.push(Some(Entry { alert, armed: true }));
        Ok(())
    }

    /// Removes an alert; false when there was none with this id.
    pub fn remove(&mut self, id: &str) -> bool {
        let Some(slot) = self.by_id.remove(id) else { return false };
        let Some(e) = self.alerts[slot as usize].take() else { return false };
        if let Some(fields) = self.series.get_mut(&e.alert.key)
            && let Some(s) = fields.iter_mut().find(|s| *s.field == *e.alert.field)
        {
            let maps = if e.alert.trigger.direction() == Direction::Above { &mut s.above } else { &mut s.below };
            if e.armed {
                maps.armed.remove(&(Level::new(e.level()), slot));
            } else {
                maps.disarmed.remove(&(Level::new(e.rearm_level()), slot));
            }
        }
        true
    }

    /// Whether the alert is armed; `None` for an unknown id.
    pub fn is_armed(&self, id: &str) -> Option<bool> {
        let slot = *self.by_id.get(id)?;
        self.alerts[slot as usize].as_ref().map(|e| e.armed)
    }

    /// Number of alerts.
    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    /// Whether there are no alerts.
    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    /// Feeds a new value of `field` for `key`; calls `fire` for every alert
    /// that fires. NULL and non-numeric values are ignored.
    pub fn update(
        &mut self,
        key: Value,
        field: &str,
        value: Value,
        ts: Timestamp,
        row: u64,
        mut fire: impl FnMut(&Fire<'_>),
    ) {
        let Some(v) = value.as_f64().filter(|v| !v.is_nan()) else { return };
        let s = Self::series_mut(&mut self.series, key, field);
        let prev = s.last.replace(v);
        let alerts = &mut self.alerts;
        let scratch = &mut self.scratch;
        let lv = Level::new(v);

        // Above: re-arm at v <= level - band, fire at prev < level <= v.
        rearm(&mut s.above, alerts, scratch, (Included((lv, 0)), Unbounded));
        if let Some(p) = prev.filter(|&p| p < v) {
            let range = (Excluded((Level::new(p), u32::MAX)), Included((lv, u32::MAX)));
            fire_range(&mut s.above, alerts, scratch, range, |id| {
                fire(&Fire { id, key, ts, row, value, direction: Direction::Above })
            });
        }
        // Below: re-arm at v >= level + band, fire at prev > level >= v.
        rearm(&mut s.below, alerts, scratch, (Unbounded, Included((lv, u32::MAX))));
        if let Some(p) = prev.filter(|&p| p > v) {
            let range = (Included((lv, 0)), Excluded((Level::new(p), 0)));
            fire_range(&mut s.below, alerts, scratch, range, |id| {
                fire(&Fire { id, key, ts, row, value, direction: Direction::Below })
            });
        }
    }
}

/// Arms the disarmed alerts whose re-arm level lies in `range` — for `above`
/// the re-arm levels `>= v`, for `below` those `<= v`.
fn rearm(
    maps: &mut Maps,
    alerts: &mut [Option<Entry>],
    scratch: &mut Vec<At>,
    range: (std::ops::Bound<At>, std::ops::Bound<At>),
) {
    if maps.disarmed.is_empty() {
        return;
    }
    scratch.clear();
    scratch.extend(maps.disarmed.range(range).map(|(k, _)| *k));
    for k in scratch.iter() {
        maps.disarmed.remove(k);
        if let Some(e) = alerts[k.1 as usize].as_mut() {
            e.armed = true;
            maps.armed.insert((Level::new(e.level()), k.1), ());
        }
    }
}

/// Fires the armed alerts whose level lies in `range` and disarms them.
fn fire_range(
    maps: &mut Maps,
    alerts: &mut [Option<Entry>],
    scratch: &mut Vec<At>,
    range: (std::ops::Bound<At>, std::ops::Bound<At>),
    mut fire: impl FnMut(&str),
) {
    scratch.clear();
    scratch.extend(maps.armed.range(range).map(|(k, _)| *k));
    for k in scratch.iter() {
        maps.armed.remove(k);
        if let Some(e) = alerts[k.1 as usize].as_mut() {
            e.armed = false;
            maps.disarmed.insert((Level::new(e.rearm_level()), k.1), ());
            fire(&e.alert.id);
        }
    }
}
