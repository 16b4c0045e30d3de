//! The state bound (LANGUAGE.md §6, `--max-state`): one budget of bytes
//! shared by everything a job keeps that grows with its input (partial
//! matches, buffer nodes, per-key history, events held for reordering), and
//! a [`Meter`] per part that holds such state.
//!
//! Each part knows its own bytes cheaply (counts it keeps anyway times the
//! size of what it counts) and tells its meter after it grows. The meter
//! publishes to the shared total only when its part has changed by a
//! [`GRAIN`] since it last did, so that a part on the hot path touches the
//! shared counter once per 64 KiB of growth, not once per event; the total
//! is therefore exact to within a grain per meter, which is part of the
//! margin `docs/semantics.md` documents.
//!
//! The budget does not act by itself: a part whose meter says the total is
//! past the limit applies the [`OnLimit`] policy (drop its oldest partial
//! matches, or stop and [`trip`](StateBudget::trip) the budget so that
//! the job stops with an error naming what holds the most).
//!
//! # Examples
//! ```
//! use std::sync::Arc;
//! use cep_core::budget::{Meter, OnLimit, StateBudget};
//!
//! let budget = Arc::new(StateBudget::new(1 << 20, OnLimit::Fail));
//! let mut a = Meter::new(Some(budget.clone()));
//! let mut b = Meter::new(Some(budget.clone()));
//! assert!(!a.update(600 << 10));
//! assert!(b.update(600 << 10)); // together past 1 MiB
//! assert!(!b.update(100 << 10)); // b gave most of it back
//! assert_eq!(budget.used(), 700 << 10);
//! ```

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// What a meter's changes smaller than this do not publish: the shared
/// total may lag each meter's part by less than this many bytes.
pub const GRAIN: usize = 64 << 10;

/// What a part does when the state bound would be passed
/// (`--on-state-limit`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum OnLimit {
    /// Stop the run with an error naming the query and key that hold the
    /// most (the default).
    #[default]
    Fail,
    /// Drop the oldest partial matches of the largest keys, count them and
    /// go on.
    DropOldest,
}

impl OnLimit {
    /// Parses `fail` or `drop-oldest`.
    pub fn parse(s: &str) -> Option<OnLimit> {
        match s {
            "fail" => Some(OnLimit::Fail),
            "drop-oldest" => Some(OnLimit::DropOldest),
            _ => None,
        }
    }
}

/// Why a run stopped at the state bound: the part that found the total
/// past the limit, and what in it held the most.
#[derive(Clone, Debug, PartialEq)]
pub struct LimitHit {
    /// What holds the state: a query's name, or what else it is (`the
    /// reorder buffer`).
    pub holder: String,
    /// The key of the partition that holds the most of it (`None`: the
    /// holder is not keyed).
    pub key: Option<crate::Value>,
    /// The bytes of that key (or of the holder when not keyed).
    pub key_bytes: usize,
    /// The partial matches of that key.
    pub key_partials: usize,
    /// The bytes of the holder.
    pub bytes: usize,
}

impl LimitHit {
    /// What a query's engine held at the bound: `largest` is its key with
    /// the most partial matches and their count (`None`: it holds none),
    /// each weighing `each` bytes; `keyed` says whether the query has a
    /// partition key to name; `bytes` is the engine's whole state.
    pub fn of_query(
        query: &str,
        keyed: bool,
        largest: Option<(crate::Value, usize)>,
        each: usize,
        bytes: usize,
    ) -> LimitHit {
        let (key, partials) = largest.map_or((None, 0), |(k, n)| (Some(k), n));
        LimitHit {
            holder: query.to_owned(),
            key: if keyed { key } else { None },
            key_bytes: partials * each,
            key_partials: partials,
            bytes,
        }
    }
}

/// The bytes a job may keep, shared by all its meters (one per query
/// engine and reorder buffer, across threads).
#[derive(Debug)]
pub struct StateBudget {
    limit: usize,
    policy: OnLimit,
    used: AtomicUsize,
    tripped: AtomicBool,
    news: AtomicBool,
    hit: Mutex<Option<LimitHit>>,
    dropped: AtomicU64,
}

impl StateBudget {
    /// A budget of `limit` bytes, with `policy` when it would be passed.
    pub fn new(limit: usize, policy: OnLimit) -> StateBudget {
        StateBudget {
            limit,
            policy,
            used: AtomicUsize::new(0),
            tripped: AtomicBool::new(false),
            news: AtomicBool::new(false),
            hit: Mutex::new(None),
            dropped: AtomicU64::new(0),
        }
    }

    /// The limit in bytes.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// What a part does at the limit.
    pub fn policy(&self) -> OnLimit {
        self.policy
    }

    /// The bytes the meters have published (each may lag its part by less
    /// than a [`GRAIN`]).
    pub fn used(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    /// Stops the job: the first caller's `hit` is kept for the message.
    pub fn trip(&self, hit: LimitHit) {
        let mut first = self.hit.lock().unwrap_or_else(|e| e.into_inner());
        if first.is_none() {
            *first = Some(hit);
        }
        self.tripped.store(true, Ordering::Release);
        self.news.store(true, Ordering::Release);
    }

    /// Whether a part stopped at the limit ([`trip`](Self::trip)).
    #[inline]
    pub fn tripped(&self) -> bool {
        self.tripped.load(Ordering::Relaxed)
    }

    /// What the first part to stop at the limit held.
    pub fn hit(&self) -> Option<LimitHit> {
        self.hit.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// What the first part to stop held, or (if none said) the whole
    /// job's published bytes.
    pub fn hit_or_total(&self) -> LimitHit {
        self.hit().unwrap_or_else(|| LimitHit {
            holder: "the job".into(),
            key: None,
            key_bytes: 0,
            key_partials: 0,
            bytes: self.used(),
        })
    }

    /// Counts partial matches dropped to stay within the limit.
    pub fn count_dropped(&self, n: u64) {
        if n > 0 && self.dropped.fetch_add(n, Ordering::Relaxed) == 0 {
            self.news.store(true, Ordering::Release);
        }
    }

    /// Whether something happened that the job's driver should look at: the
    /// budget [tripped](Self::trip), or the first partial matches dropped
    /// (to warn once). One load, for a loop to test per event.
    #[inline]
    pub fn has_news(&self) -> bool {
        self.news.load(Ordering::Relaxed)
    }

    /// Marks the news read (a trip stays news).
    pub fn clear_news(&self) {
        if !self.tripped() {
            self.news.store(false, Ordering::Release);
        }
    }

    /// Partial matches dropped to stay within the limit, by every part.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

/// One part's share of a [`StateBudget`] (or nothing, when there is no
/// bound): what it last published.
#[derive(Debug, Default)]
pub struct Meter {
    budget: Option<Arc<StateBudget>>,
    published: usize,
}

impl Meter {
    /// A meter of `budget` (`None`: unbounded, and every call is a no-op).
    pub fn new(budget: Option<Arc<StateBudget>>) -> Meter {
        Meter { budget, published: 0 }
    }

    /// Whether there is a bound to keep.
    #[inline]
    pub fn is_bounded(&self) -> bool {
        self.budget.is_some()
    }

    /// The budget, if any.
    pub fn budget(&self) -> Option<&Arc<StateBudget>> {
        self.budget.as_ref()
    }

    /// The part now holds `bytes`; true when the job's total (as this
    /// meter knows it) is past the limit.
    #[inline]
    pub fn update(&mut self, bytes: usize) -> bool {
        let Some(budget) = &self.budget else { return false };
        if bytes.abs_diff(self.published) >= GRAIN {
            if bytes > self.published {
                budget.used.fetch_add(bytes - self.published, Ordering::Relaxed);
            } else {
                budget.used.fetch_sub(self.published - bytes, Ordering::Relaxed);
            }
            self.published = bytes;
        }
        self.estimate(bytes) > budget.limit
    }

    /// The bytes this part may still add before the total passes the limit
    /// (as this meter knows it); `usize::MAX` without a bound.
    #[inline]
    pub fn headroom(&self, bytes: usize) -> usize {
        match &self.budget {
            None => usize::MAX,
            Some(b) => b.limit.saturating_sub(self.estimate(bytes)),
        }
    }

    /// The job's total with this part at `bytes`: the shared total read
    /// now, corrected by what this part has not published.
    #[inline]
    fn estimate(&self, bytes: usize) -> usize {
        let Some(budget) = &self.budget else { return 0 };
        (budget.used.load(Ordering::Relaxed) + bytes).saturating_sub(self.published)
    }

    /// Gives the part's bytes back (it is dropped or emptied).
    pub fn clear(&mut self) {
        if let Some(budget) = &self.budget {
            budget.used.fetch_sub(self.published, Ordering::Relaxed);
        }
        self.published = 0;
    }
}

impl Drop for Meter {
    fn drop(&mut self) {
        self.clear();
    }
}

/// Half the machine's memory (Linux: `MemTotal` of `/proc/meminfo`), the
/// default bound; `None` where it cannot be read.
pub fn half_of_memory() -> Option<usize> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: usize = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib.saturating_mul(1024) / 2)
}

/// Parses a size: bytes, or a number with `KiB`, `MiB`, `GiB`, `TiB` (or
/// `K`, `M`, `G`, `T`, `KB`, `MB`, `GB`, `TB`, all powers of 1024).
///
/// # Examples
/// ```
/// use cep_core::budget::parse_size;
/// assert_eq!(parse_size("512MiB"), Some(512 << 20));
/// assert_eq!(parse_size("4GiB"), Some(4 << 30));
/// assert_eq!(parse_size("1.5 GiB"), Some(3 << 29));
/// assert_eq!(parse_size("1000"), Some(1000));
/// assert_eq!(parse_size("lots"), None);
/// ```
pub fn parse_size(s: &str) -> Option<usize> {
    let s = s.trim();
    let split = s.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(s.len());
    let (num, unit) = (&s[..split], s[split..].trim());
    let shift = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        _ => return None,
    };
    if num.is_empty() {
        return None;
    }
    if let Ok(n) = num.parse::<u64>() {
        return usize::try_from(n.checked_mul(1u64 << shift)?).ok();
    }
    let x: f64 = num.parse().ok()?;
    let bytes = x * (1u64 << shift) as f64;
    (bytes.is_finite() && bytes >= 0.0 && bytes < usize::MAX as f64).then_some(bytes as usize)
}

/// A size as a person reads it: `512 MiB`, `1.5 GiB`, `300 bytes`.
pub fn show_size(bytes: usize) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} bytes");
    }
    let mut x = bytes as f64 / 1024.0;
    let mut unit = 0;
    while x >= 1024.0 && unit + 1 < UNITS.len() {
        x /= 1024.0;
        unit += 1;
    }
    if (x - x.round()).abs() < 0.05 { format!("{:.0} {}", x, UNITS[unit]) } else { format!("{:.1} {}", x, UNITS[unit]) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meters_publish_by_grain_and_give_back_on_drop() {
        let budget = Arc::new(StateBudget::new(10 * GRAIN, OnLimit::Fail));
        let mut a = Meter::new(Some(budget.clone()));
        assert!(!a.update(GRAIN / 2));
        assert_eq!(budget.used(), 0, "below a grain: not published");
        assert_eq!(a.headroom(GRAIN / 2), 10 * GRAIN - GRAIN / 2);
        assert!(!a.update(3 * GRAIN));
        assert_eq!(budget.used(), 3 * GRAIN);
        {
            let mut b = Meter::new(Some(budget.clone()));
            assert!(b.update(8 * GRAIN));
            assert_eq!(budget.used(), 11 * GRAIN);
        }
        assert_eq!(budget.used(), 3 * GRAIN, "a dropped meter gives its bytes back");
        assert!(!a.update(0));
        assert_eq!(budget.used(), 0);
    }

    #[test]
    fn no_budget_is_unbounded() {
        let mut m = Meter::new(None);
        assert!(!m.update(usize::MAX));
        assert_eq!(m.headroom(1 << 40), usize::MAX);
    }

    #[test]
    fn trip_keeps_the_first_hit() {
        let budget = StateBudget::new(1, OnLimit::Fail);
        let hit = |holder: &str| LimitHit { holder: holder.into(), key: None, key_bytes: 0, key_partials: 0, bytes: 0 };
        assert!(!budget.tripped());
        budget.trip(hit("q1"));
        budget.trip(hit("q2"));
        assert!(budget.tripped());
        assert_eq!(budget.hit().unwrap().holder, "q1");
    }

    #[test]
    fn sizes_parse_and_show() {
        assert_eq!(parse_size("64KiB"), Some(64 << 10));
        assert_eq!(parse_size("2 GB"), Some(2 << 30));
        assert_eq!(parse_size("-1"), None);
        assert_eq!(parse_size("99999999999999999999TiB"), None);
        assert_eq!(show_size(512 << 20), "512 MiB");
        assert_eq!(show_size(3 << 29), "1.5 GiB");
        assert_eq!(show_size(10), "10 bytes");
    }
}
