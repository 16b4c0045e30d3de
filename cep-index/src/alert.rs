//! What an alert is: its trigger, its hysteresis band, and the one state
//! machine every index in this crate applies to it.

use cep_core::{Timestamp, Value};

/// When an alert fires. Regions are closed: a value equal to a level is
/// on it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Trigger {
    /// The value rises to or through `level`: fire region `[level, ∞)`.
    Above(f64),
    /// The value falls to or through `level`: fire region `(-∞, level]`.
    Below(f64),
    /// The value enters `[lo, hi]` from outside.
    Enter {
        /// Lower edge (inclusive).
        lo: f64,
        /// Upper edge (inclusive).
        hi: f64,
    },
    /// The value leaves `[lo, hi]`.
    Exit {
        /// Lower edge (inclusive).
        lo: f64,
        /// Upper edge (inclusive).
        hi: f64,
    },
}

/// The direction word of a fire (`"direction"` in the output).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Direction {
    /// [`Trigger::Above`].
    Above,
    /// [`Trigger::Below`].
    Below,
    /// [`Trigger::Enter`].
    Enter,
    /// [`Trigger::Exit`].
    Exit,
}

impl Direction {
    /// Parses `above`, `below`, `enter` or `exit`.
    pub fn parse(s: &str) -> Option<Direction> {
        match s {
            "above" => Some(Direction::Above),
            "below" => Some(Direction::Below),
            "enter" => Some(Direction::Enter),
            "exit" => Some(Direction::Exit),
            _ => None,
        }
    }

    /// The word used in output.
    pub fn name(self) -> &'static str {
        match self {
            Direction::Above => "above",
            Direction::Below => "below",
            Direction::Enter => "enter",
            Direction::Exit => "exit",
        }
    }
}

impl Trigger {
    /// The direction word of this trigger.
    pub fn direction(self) -> Direction {
        match self {
            Trigger::Above(_) => Direction::Above,
            Trigger::Below(_) => Direction::Below,
            Trigger::Enter { .. } => Direction::Enter,
            Trigger::Exit { .. } => Direction::Exit,
        }
    }

    /// Whether `v` is in the fire region.
    #[inline]
    pub fn in_fire_region(self, v: f64) -> bool {
        match self {
            Trigger::Above(level) => v >= level,
            Trigger::Below(level) => v <= level,
            Trigger::Enter { lo, hi } => lo <= v && v <= hi,
            Trigger::Exit { lo, hi } => v < lo || v > hi,
        }
    }

    /// Whether `v` is in the re-arm region for hysteresis `band`: the value
    /// has retreated from the fire region by at least the band.
    #[inline]
    pub fn in_rearm_region(self, v: f64, band: f64) -> bool {
        match self {
            Trigger::Above(level) => v <= level - band,
            Trigger::Below(level) => v >= level + band,
            Trigger::Enter { lo, hi } => v <= lo - band || v >= hi + band,
            Trigger::Exit { lo, hi } => lo + band <= v && v <= hi - band,
        }
    }

    /// The points where the fire region begins or ends (`fire`) and where
    /// the re-arm region does (`rearm`). A value crossing none of an
    /// alert's points cannot change its state (see the crate docs).
    pub(crate) fn edges(self, band: f64) -> ([f64; 2], usize, [f64; 2], usize) {
        match self {
            Trigger::Above(level) => ([level, 0.0], 1, [level - band, 0.0], 1),
            Trigger::Below(level) => ([level, 0.0], 1, [level + band, 0.0], 1),
            Trigger::Enter { lo, hi } => ([lo, hi], 2, [lo - band, hi + band], 2),
            Trigger::Exit { lo, hi } => {
                // An empty re-arm region has no edges: the alert never re-arms.
                let n = if lo + band <= hi - band { 2 } else { 0 };
                ([lo, hi], 2, [lo + band, hi - band], n)
            }
        }
    }

    fn numbers(self) -> [f64; 2] {
        match self {
            Trigger::Above(x) | Trigger::Below(x) => [x, x],
            Trigger::Enter { lo, hi } | Trigger::Exit { lo, hi } => [lo, hi],
        }
    }
}

/// Applies one value to one alert (LANGUAGE.md §4, generalised to bands):
/// a disarmed alert whose re-arm region holds `v` re-arms; then an armed
/// alert fires when `prev` is outside its fire region and `v` inside, and
/// disarms. Returns `(armed after, fired)`.
///
/// # Examples
/// ```
/// use cep_index::{step, Trigger};
/// let t = Trigger::Above(10100.0);
/// assert_eq!(step(t, 5.0, true, Some(10000.0), 10120.0), (false, true)); // crosses: fires
/// assert_eq!(step(t, 5.0, false, Some(10120.0), 10098.0), (false, false)); // not back by 5 yet
/// assert_eq!(step(t, 5.0, false, Some(10098.0), 10090.0), (true, false)); // re-armed
/// ```
#[inline]
pub fn step(trigger: Trigger, band: f64, mut armed: bool, prev: Option<f64>, v: f64) -> (bool, bool) {
    if !armed && trigger.in_rearm_region(v, band) {
        armed = true;
    }
    let fires = armed && prev.is_some_and(|p| !trigger.in_fire_region(p)) && trigger.in_fire_region(v);
    (armed && !fires, fires)
}

/// A standing alert: watch `field` of the events with key `key`.
#[derive(Clone, Debug, PartialEq)]
pub struct Alert {
    /// Caller's id (unique in an index).
    pub id: String,
    /// The key it watches (compared with [`Value`] equality).
    pub key: Value,
    /// The field it watches.
    pub field: String,
    /// When it fires.
    pub trigger: Trigger,
    /// Hysteresis: how far the value must retreat before it fires again.
    pub band: f64,
}

impl Alert {
    /// An alert firing when the value rises to or through `level`.
    ///
    /// # Examples
    /// ```
    /// use cep_core::Value;
    /// use cep_index::{Alert, Direction};
    /// let a = Alert::above("a17", Value::Int(7), "price", 10100.0, 5.0);
    /// assert_eq!(a.trigger.direction(), Direction::Above);
    /// ```
    pub fn above(id: impl Into<String>, key: Value, field: impl Into<String>, level: f64, band: f64) -> Alert {
        Alert { id: id.into(), key, field: field.into(), trigger: Trigger::Above(level), band }
    }

    /// An alert firing when the value falls to or through `level`.
    pub fn below(id: impl Into<String>, key: Value, field: impl Into<String>, level: f64, band: f64) -> Alert {
        Alert { id: id.into(), key, field: field.into(), trigger: Trigger::Below(level), band }
    }

    /// An alert firing when the value enters `[lo, hi]`.
    pub fn enter(id: impl Into<String>, key: Value, field: impl Into<String>, lo: f64, hi: f64, band: f64) -> Alert {
        Alert { id: id.into(), key, field: field.into(), trigger: Trigger::Enter { lo, hi }, band }
    }

    /// An alert firing when the value leaves `[lo, hi]`.
    pub fn exit(id: impl Into<String>, key: Value, field: impl Into<String>, lo: f64, hi: f64, band: f64) -> Alert {
        Alert { id: id.into(), key, field: field.into(), trigger: Trigger::Exit { lo, hi }, band }
    }

    /// Checks the numbers: levels finite, `lo <= hi`, band finite and `>= 0`,
    /// and every edge (level ± band) finite.
    pub fn validate(&self) -> Result<(), AlertError> {
        let bad = |what: &str| Err(AlertError::BadNumber(format!("alert `{}`: {what}", self.id)));
        let [lo, hi] = self.trigger.numbers();
        if !lo.is_finite() || !hi.is_finite() {
            return bad("the level must be a finite number");
        }
        if lo > hi {
            return bad("the band's low edge is above its high edge");
        }
        if !self.band.is_finite() || self.band < 0.0 {
            return bad("the band must be a finite number >= 0");
        }
        if !(lo - self.band).is_finite() || !(hi + self.band).is_finite() {
            return bad("level ± band overflows");
        }
        Ok(())
    }
}

/// A fired alert, handed to the caller's callback.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Fire<'a> {
    /// The alert's id.
    pub id: &'a str,
    /// The key of the event.
    pub key: Value,
    /// Event time.
    pub ts: Timestamp,
    /// Input row.
    pub row: u64,
    /// The value that crossed.
    pub value: Value,
    /// Direction of the alert.
    pub direction: Direction,
}

impl Fire<'_> {
    /// Appends the output line of LANGUAGE.md §5 (without a newline):
    /// `{"level":"a17","key":7,"ts":1200,"row":3,"value":10120,"direction":"above"}`.
    ///
    /// # Examples
    /// ```
    /// use cep_core::Value;
    /// use cep_index::{Direction, Fire};
    /// let f = Fire { id: "a17", key: Value::Int(7), ts: 1200, row: 3, value: Value::Int(10120),
    ///                direction: Direction::Above };
    /// let mut line = Vec::new();
    /// f.write_json(&mut line);
    /// assert_eq!(line, br#"{"level":"a17","key":7,"ts":1200,"row":3,"value":10120,"direction":"above"}"#);
    /// ```
    pub fn write_json(&self, line: &mut Vec<u8>) {
        line.extend_from_slice(b"{\"level\":");
        cep_core::json::write_str(line, self.id);
        line.extend_from_slice(b",\"key\":");
        cep_core::json::write_value(line, &self.key);
        line.extend_from_slice(b",\"ts\":");
        cep_core::json::write_i64(line, self.ts);
        line.extend_from_slice(b",\"row\":");
        cep_core::json::write_u64(line, self.row);
        line.extend_from_slice(b",\"value\":");
        cep_core::json::write_value(line, &self.value);
        line.extend_from_slice(b",\"direction\":\"");
        line.extend_from_slice(self.direction.name().as_bytes());
        line.extend_from_slice(b"\"}");
    }
}

/// Why an alert was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AlertError {
    /// An alert with this id exists (or comes twice in one batch).
    DuplicateId(String),
    /// A level or band is not a usable number.
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

/// The state of an alert.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AlertState {
    /// It fires on the next crossing.
    Armed,
    /// It fired and waits for the value to retreat by its band.
    Disarmed,
}
