#![doc = include_str!("../README.md")]

use ahash::AHashMap;
use cep_core::{Timestamp, Value};

/// Crossing direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// Fires when the value rises to or through the level.
    Above,
    /// Fires when the value falls to or through the level.
    Below,
}

impl Direction {
    /// Parses `above` or `below`.
    pub fn parse(s: &str) -> Option<Direction> {
        match s {
            "above" => Some(Direction::Above),
            "below" => Some(Direction::Below),
            _ => None,
        }
    }

    /// The word used in output.
    pub fn name(self) -> &'static str {
        match self {
            Direction::Above => "above",
            Direction::Below => "below",
        }
    }
}

/// A standing alert: fire when `field` of events with key `key` crosses
/// `level` in `direction`; re-arm after the value retreats by `band`.
#[derive(Clone, Debug, PartialEq)]
pub struct Alert {
    /// Caller's id.
    pub id: String,
    /// Partition key the alert watches.
    pub key: Value,
    /// Field name.
    pub field: String,
    /// Direction.
    pub direction: Direction,
    /// Threshold.
    pub level: f64,
    /// Hysteresis band (≥ 0).
    pub band: f64,
}

/// A fired alert.
#[derive(Clone, Debug, PartialEq)]
pub struct Fire {
    /// The alert's id.
    pub id: String,
    /// Event time.
    pub ts: Timestamp,
    /// Input row.
    pub row: u64,
    /// The value that crossed.
    pub value: Value,
    /// Direction of the alert.
    pub direction: Direction,
}

#[derive(Debug)]
struct Entry {
    alert: Alert,
    armed: bool,
}

/// Level alerts with hysteresis, checked by a scan of the alerts of the
/// event's key and field (O(alerts of that key) per value).
///
/// Semantics (LANGUAGE.md §4): for each new value of a key's field, with
/// `prev` that key's previous value, an armed `above` alert fires when
/// `prev < level <= value` and then stays disarmed until a value
/// `<= level - band` is seen; `below` mirrors it. The first value of a key
/// never fires. Values compare as f64 (ints convert exactly up to 2^53).
#[derive(Debug, Default)]
pub struct LevelIndex {
    alerts: Vec<Option<Entry>>,
    by_id: AHashMap<String, usize>,
    by_key: AHashMap<(Value, String), Vec<usize>>,
    last: AHashMap<(Value, String), f64>,
}

/// Why an alert was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AlertError {
    /// An alert with this id exists.
    DuplicateId(String),
    /// The band is negative or not finite, or the level not finite.
    BadNumber(String),
}

impl std::fmt::Display for AlertError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AlertError::DuplicateId(id) => write!(f, "duplicate alert id `{id}`"),
            AlertError::BadNumber(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for AlertError {}

impl LevelIndex {
    /// An empty index.
    pub fn new() -> LevelIndex {
        LevelIndex::default()
    }

    /// Registers an alert, armed.
    pub fn add(&mut self, alert: Alert) -> Result<(), AlertError> {
        if self.by_id.contains_key(&alert.id) {
            return Err(AlertError::DuplicateId(alert.id));
        }
        if !alert.level.is_finite() || !alert.band.is_finite() || alert.band < 0.0 {
            return Err(AlertError::BadNumber(format!(
                "alert `{}`: level must be finite and band finite and >= 0",
                alert.id
            )));
        }
        let slot = self.alerts.len();
        self.by_id.insert(alert.id.clone(), slot);
        self.by_key.entry((alert.key, alert.field.clone())).or_default().push(slot);
        self.alerts.push(Some(Entry { alert, armed: true }));
        Ok(())
    }

    /// Removes an alert; false when there was none with this id.
    pub fn remove(&mut self, id: &str) -> bool {
        let Some(slot) = self.by_id.remove(id) else { return false };
        if let Some(e) = self.alerts[slot].take()
            && let Some(v) = self.by_key.get_mut(&(e.alert.key, e.alert.field))
        {
            v.retain(|&s| s != slot);
        }
        true
    }

    /// Whether the alert is armed; `None` for an unknown id.
    pub fn is_armed(&self, id: &str) -> Option<bool> {
        let slot = *self.by_id.get(id)?;
        self.alerts[slot].as_ref().map(|e| e.armed)
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
        mut fire: impl FnMut(Fire),
    ) {
        let Some(v) = value.as_f64() else { return };
        let k = (key, field.to_owned());
        let prev = self.last.insert(k.clone(), v);
        let Some(slots) = self.by_key.get(&k) else { return };
        for &slot in slots {
            let Some(e) = self.alerts[slot].as_mut() else { continue };
            let a = &e.alert;
            match a.direction {
                Direction::Above => {
                    if !e.armed && v <= a.level - a.band {
                        e.armed = true;
                    }
                    if e.armed && prev.is_some_and(|p| p < a.level) && a.level <= v {
                        e.armed = false;
                        fire(Fire { id: a.id.clone(), ts, row, value, direction: a.direction });
                    }
                }
                Direction::Below => {
                    if !e.armed && v >= a.level + a.band {
                        e.armed = true;
                    }
                    if e.armed && prev.is_some_and(|p| p > a.level) && a.level >= v {
                        e.armed = false;
                        fire(Fire { id: a.id.clone(), ts, row, value, direction: a.direction });
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alert(dir: Direction) -> Alert {
        Alert { id: "a".into(), key: Value::Int(1), field: "price".into(), direction: dir, level: 10100.0, band: 5.0 }
    }

    fn fires(idx: &mut LevelIndex, values: &[i64]) -> Vec<usize> {
        values
            .iter()
            .enumerate()
            .map(|(i, &v)| {
                let mut n = 0;
                idx.update(Value::Int(1), "price", Value::Int(v), i as i64, i as u64, |_| n += 1);
                n
            })
            .collect()
    }

    #[test]
    fn worked_example_above() {
        let mut idx = LevelIndex::new();
        idx.add(alert(Direction::Above)).unwrap();
        let got = fires(&mut idx, &[10000, 10120, 10130, 10098, 10110, 10090, 10105]);
        assert_eq!(got, [0, 1, 0, 0, 0, 0, 1]);
    }

    #[test]
    fn below_mirrors_and_first_value_never_fires() {
        let mut idx = LevelIndex::new();
        idx.add(Alert { level: 100.0, ..alert(Direction::Below) }).unwrap();
        assert_eq!(fires(&mut idx, &[50, 150, 99, 98, 104, 90, 106, 100]), [0, 0, 1, 0, 0, 0, 0, 1]);
    }

    #[test]
    fn duplicate_and_remove() {
        let mut idx = LevelIndex::new();
        idx.add(alert(Direction::Above)).unwrap();
        assert_eq!(idx.add(alert(Direction::Above)), Err(AlertError::DuplicateId("a".into())));
        assert_eq!(idx.is_armed("a"), Some(true));
        assert!(idx.remove("a"));
        assert!(!idx.remove("a"));
        assert_eq!(fires(&mut idx, &[1, 20000]), [0, 0]);
    }
}
