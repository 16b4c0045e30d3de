//! [`ScanIndex`]: the obvious implementation, every alert of the key and
//! field checked against every value. It is the reference the indexed
//! [`LevelIndex`](crate::LevelIndex) is tested against, written straight
//! from the rules in the crate docs (it shares no code with the index's
//! state machine) — and the cost model the index exists to beat.

use ahash::AHashMap;
use cep_core::{Timestamp, Value};

use crate::alert::{Alert, AlertError, AlertState, Fire, Trigger};

#[derive(Debug)]
struct Entry {
    alert: Alert,
    armed: bool,
}

/// Level alerts checked by a scan: O(alerts of the key and field) per value.
///
/// # Examples
/// ```
/// use cep_core::Value;
/// use cep_index::{Alert, ScanIndex};
/// let mut idx = ScanIndex::new();
/// idx.add(Alert::below("dip", Value::Int(1), "price", 95.0, 2.0)).unwrap();
/// let mut fired = Vec::new();
/// for (row, p) in [100, 94, 96, 97, 95].into_iter().enumerate() {
///     idx.update("price", Value::Int(1), Value::Int(p), row as i64, row as u64, |f| fired.push(f.row));
/// }
/// assert_eq!(fired, [1, 4]); // re-armed by 97 (>= 95 + 2)
/// ```
#[derive(Debug, Default)]
pub struct ScanIndex {
    alerts: Vec<Option<Entry>>,
    by_id: AHashMap<String, usize>,
    last: AHashMap<(Value, String), f64>,
    watched: Vec<String>,
}

impl ScanIndex {
    /// An empty index.
    pub fn new() -> ScanIndex {
        ScanIndex::default()
    }

    /// Registers an alert, armed.
    pub fn add(&mut self, alert: Alert) -> Result<(), AlertError> {
        alert.validate()?;
        if self.by_id.contains_key(&alert.id) {
            return Err(AlertError::DuplicateId(alert.id));
        }
        if !self.watched.contains(&alert.field) {
            self.watched.push(alert.field.clone());
        }
        self.by_id.insert(alert.id.clone(), self.alerts.len());
        self.alerts.push(Some(Entry { alert, armed: true }));
        Ok(())
    }

    /// Removes an alert; false when there was none with this id.
    pub fn remove(&mut self, id: &str) -> bool {
        match self.by_id.remove(id) {
            Some(i) => self.alerts[i].take().is_some(),
            None => false,
        }
    }

    /// The state of an alert; `None` for an unknown id.
    pub fn state(&self, id: &str) -> Option<AlertState> {
        let e = self.alerts[*self.by_id.get(id)?].as_ref()?;
        Some(if e.armed { AlertState::Armed } else { AlertState::Disarmed })
    }

    /// Feeds a value of `field` for `key`: calls `fire` for each alert that
    /// fires, in the order the alerts were added. NULL, non-numeric and NaN
    /// values are ignored, and so are fields that never had an alert (their
    /// values are not remembered as `prev`).
    pub fn update(
        &mut self,
        field: &str,
        key: Value,
        value: Value,
        ts: Timestamp,
        row: u64,
        mut fire: impl FnMut(&Fire<'_>),
    ) {
        let Some(v) = value.as_f64().filter(|v| !v.is_nan()) else { return };
        if !self.watched.iter().any(|w| w == field) {
            return;
        }
        let prev = self.last.insert((key, field.to_owned()), v);
        for e in self.alerts.iter_mut().flatten() {
            let a = &e.alert;
            if a.key != key || a.field != field {
                continue;
            }
            let b = a.band;
            // Re-arm: the value has retreated from the fire region by the band.
            let rearm = match a.trigger {
                Trigger::Above(l) => v <= l - b,
                Trigger::Below(l) => v >= l + b,
                Trigger::Enter { lo, hi } => v <= lo - b || v >= hi + b,
                Trigger::Exit { lo, hi } => v >= lo + b && v <= hi - b,
            };
            if rearm {
                e.armed = true;
            }
            // Fire: prev outside the fire region, v inside.
            let Some(p) = prev else { continue };
            let crosses = match a.trigger {
                Trigger::Above(l) => p < l && l <= v,
                Trigger::Below(l) => p > l && l >= v,
                Trigger::Enter { lo, hi } => (p < lo || p > hi) && (lo <= v && v <= hi),
                Trigger::Exit { lo, hi } => (lo <= p && p <= hi) && (v < lo || v > hi),
            };
            if e.armed && crosses {
                e.armed = false;
                fire(&Fire { id: &a.id, key, ts, row, value, direction: a.trigger.direction() });
            }
        }
    }
}
