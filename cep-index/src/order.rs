//! Floats as ordered integers: the index sorts and compares `u64` keys, never
//! `f64`s (which have no total order in Rust and are slower to compare).

/// The key of `x`: `a <= b` ⇔ `key(a) <= key(b)` for every non-NaN `a`, `b`
/// (`-0.0` and `0.0` share a key). Callers keep NaN out.
///
/// # Examples
/// ```
/// use cep_index::order_key;
/// let xs = [-1e300, -2.5, -0.0, 0.0, 1e-300, 3.0, f64::INFINITY];
/// for w in xs.windows(2) {
///     assert!(order_key(w[0]) <= order_key(w[1]));
/// }
/// assert_eq!(order_key(-0.0), order_key(0.0));
/// ```
#[inline]
pub fn order_key(x: f64) -> u64 {
    debug_assert!(!x.is_nan());
    let bits = (x + 0.0).to_bits(); // -0.0 + 0.0 == +0.0
    if bits >> 63 == 1 { !bits } else { bits | 1 << 63 }
}
