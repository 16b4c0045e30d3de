//! W1b level alerts (DESIGN.md §3): standing `above` alerts on the `price`
//! of the W1 ticks, 100 per key for 10,000 keys (1,000,000 in all), band 5.
//!
//! Generator: a second xorshift64 with the same initial state as W1's
//! ([`XorShift64::default`], `0x9E3779B97F4A7C15`), one draw per alert:
//! `for key in 0..keys { for i in 0..per_key { level = 9000 + rnd % 2000 } }`.
//! Alert `i` of key `key` has id `k{key}_{i}`, key `key` (an int), field
//! `price`, direction `above`, band 5. As CSV (the `cep run --levels` file
//! of LANGUAGE.md §4): columns `id,key,field,direction,level,band`.
//!
//! Over the 3,000,000 W1 ticks the 1,000,000 alerts fire 759,291 times.

use std::io::{self, Write};

use cep_core::Value;
use cep_index::Alert;

use crate::w1::XorShift64;

/// Keys with alerts (all W1 keys).
pub const KEYS: usize = 10_000;
/// Alerts per key.
pub const PER_KEY: usize = 100;
/// The hysteresis band of every alert.
pub const BAND: i64 = 5;
/// The field the alerts watch.
pub const FIELD: &str = "price";
/// Fires of the full W1b workload (all alerts over all W1 ticks).
pub const FIRES: usize = 759_291;

/// One generated level: `(key, i, level)` in generation order.
///
/// # Examples
/// ```
/// let v: Vec<_> = cep_bench::levels::levels(2, 3).collect();
/// assert_eq!(v.len(), 6);
/// assert_eq!((v[4].0, v[4].1), (1, 1));
/// assert!(v.iter().all(|&(_, _, l)| (9000..11000).contains(&l)));
/// ```
pub fn levels(keys: usize, per_key: usize) -> impl Iterator<Item = (i64, usize, i64)> {
    let mut rng = XorShift64::default();
    (0..keys as i64)
        .flat_map(move |key| (0..per_key).map(move |i| (key, i)))
        .map(move |(key, i)| (key, i, 9000 + (rng.next_u64() % 2000) as i64))
}

/// The alerts of the first `keys` keys, `per_key` each (W1b is
/// `alerts(KEYS, PER_KEY)`).
///
/// # Examples
/// ```
/// use cep_bench::levels::alerts;
/// use cep_index::Direction;
/// let a = alerts(10, 100);
/// assert_eq!(a.len(), 1000);
/// assert_eq!(a[101].id, "k1_1");
/// assert_eq!(a[101].trigger.direction(), Direction::Above);
/// assert_eq!(a[101].band, 5.0);
/// ```
pub fn alerts(keys: usize, per_key: usize) -> Vec<Alert> {
    levels(keys, per_key)
        .map(|(key, i, level)| Alert::above(format!("k{key}_{i}"), Value::Int(key), FIELD, level as f64, BAND as f64))
        .collect()
}

/// Writes the alerts as the `--levels` CSV (`id,key,field,direction,level,band`).
pub fn write_csv(out: &mut impl Write, keys: usize, per_key: usize) -> io::Result<()> {
    writeln!(out, "id,key,field,direction,level,band")?;
    for (key, i, level) in levels(keys, per_key) {
        writeln!(out, "k{key}_{i},{key},{FIELD},above,{level},{BAND}")?;
    }
    Ok(())
}
