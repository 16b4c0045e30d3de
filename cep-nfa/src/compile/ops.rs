//! The value semantics of expressions: arithmetic and comparison.
//!
//! int op int is int (checked: overflow gives NULL; `/` truncates; `/` or `%`
//! by zero gives NULL); an int with a float is a float (a non-finite result
//! gives NULL); anything with NULL, a string or a bool gives NULL.
//! Comparisons follow [`Value::compare`]: NULL or incomparable kinds make
//! every comparison false.

use std::cmp::Ordering;

use cep_core::Value;

use crate::syntax::ast::BinOp;

/// Applies an arithmetic operator.
///
/// # Examples
/// ```
/// use cep_core::Value;
/// use cep_nfa::compile::ops::arith;
/// use cep_nfa::syntax::ast::BinOp;
/// assert_eq!(arith(BinOp::Div, Value::Int(7), Value::Int(2)), Value::Int(3));
/// assert_eq!(arith(BinOp::Div, Value::Int(7), Value::Int(0)), Value::Null);
/// assert_eq!(arith(BinOp::Add, Value::Int(i64::MAX), Value::Int(1)), Value::Null);
/// assert_eq!(arith(BinOp::Div, Value::Int(i64::MIN), Value::Int(-1)), Value::Null);
/// assert_eq!(arith(BinOp::Rem, Value::Int(i64::MIN), Value::Int(-1)), Value::Int(0));
/// assert_eq!(arith(BinOp::Mul, Value::Int(3), Value::Float(0.5)), Value::Float(1.5));
/// ```
#[inline(always)]
pub fn arith(op: BinOp, a: Value, b: Value) -> Value {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => {
            let r = match op {
                BinOp::Add => x.checked_add(y),
                BinOp::Sub => x.checked_sub(y),
                BinOp::Mul => x.checked_mul(y),
                BinOp::Div => x.checked_div(y),
                // `i64::MIN % -1` is 0, though `i64::MIN / -1` overflows.
                BinOp::Rem if y == -1 => Some(0),
                BinOp::Rem => x.checked_rem(y),
                _ => None,
            };
            r.map_or(Value::Null, Value::Int)
        }
        _ => match (a.as_f64(), b.as_f64()) {
            (Some(x), Some(y)) => {
                let r = match op {
                    BinOp::Add => x + y,
                    BinOp::Sub => x - y,
                    BinOp::Mul => x * y,
                    BinOp::Div if y == 0.0 => return Value::Null,
                    BinOp::Div => x / y,
                    BinOp::Rem if y == 0.0 => return Value::Null,
                    BinOp::Rem => x % y,
                    _ => return Value::Null,
                };
                Value::float(r)
            }
            _ => Value::Null,
        },
    }
}

/// Applies a comparison operator; false when the values do not compare.
#[inline(always)]
pub fn compare(op: BinOp, a: Value, b: Value) -> bool {
    let ord = match (a, b) {
        (Value::Int(x), Value::Int(y)) => x.cmp(&y),
        _ => match a.compare(&b) {
            Some(o) => o,
            None => return false,
        },
    };
    holds(op, ord)
}

/// Whether comparison `op` holds for two values ordered `ord`.
#[inline]
pub fn holds(op: BinOp, ord: Ordering) -> bool {
    match op {
        BinOp::Eq => ord == Ordering::Equal,
        BinOp::Ne => ord != Ordering::Equal,
        BinOp::Lt => ord == Ordering::Less,
        BinOp::Le => ord != Ordering::Greater,
        BinOp::Gt => ord == Ordering::Greater,
        BinOp::Ge => ord != Ordering::Less,
        _ => false,
    }
}

/// Negation: `-x`, NULL on overflow.
#[inline]
pub fn neg(a: Value) -> Value {
    match a {
        Value::Int(x) => x.checked_neg().map_or(Value::Null, Value::Int),
        Value::Float(x) => Value::Float(-x),
        _ => Value::Null,
    }
}

/// `abs(x)`, NULL on overflow.
#[inline]
pub fn abs(a: Value) -> Value {
    match a {
        Value::Int(x) => x.checked_abs().map_or(Value::Null, Value::Int),
        Value::Float(x) => Value::Float(x.abs()),
        _ => Value::Null,
    }
}

/// Folds a value into a running sum: `(sum, n)` over non-NULL values; the
/// sum becomes NULL (for good) on overflow.
#[inline]
pub fn sum_step(sum: Value, n: Value, v: Value) -> (Value, Value) {
    if v.kind().is_none_or(|k| !k.is_numeric()) {
        return (sum, n);
    }
    let count = n.as_i64().unwrap_or(0);
    let new_sum = if count == 0 {
        v
    } else if sum.is_null() {
        Value::Null
    } else {
        arith(BinOp::Add, sum, v)
    };
    (new_sum, Value::Int(count + 1))
}

/// The running state of `avg`: three registers `(lo, hi, n)`, kept apart
/// from `sum`'s because the two read an int overflow differently.
///
/// `sum` follows the contract's `+` (an int overflow is NULL for good), but
/// `avg` is a float, and the average of ints is always representable even
/// when their sum is not: `avg(5e18, 5e18)` is 5e18. So while every value
/// is an int, `(lo, hi)` hold the exact sum as an i128 split into its low
/// and high 64 bits (two `Int`s: registers are [`Value`]s), and `n` counts
/// the values. An i128 cannot overflow here: each value is within 2^63, so
/// 2^64 values sum to less than 2^127, more than any run can bind. Float
/// arithmetic is no substitute: a float running sum would round at every
/// step (5e18 + 1 + … loses the ones), where the exact sum gives the float
/// nearest the exact average ([`int_avg`]).
///
/// From the first float on, the sum is a float as in `sum` (the exact int
/// sum so far, rounded, plus the float, …): `hi` is NULL, `lo` the float sum,
/// NULL for good once it is not finite. Values that are not numbers are
/// skipped.
#[inline]
pub fn avg_step(lo: Value, hi: Value, n: Value, v: Value) -> (Value, Value, Value) {
    let count = n.as_i64().unwrap_or(0);
    let exact = if count == 0 { Some(0) } else { int_sum(lo, hi) };
    let (lo, hi) = match (v, exact) {
        (Value::Int(x), Some(s)) => split(s + i128::from(x)),
        // The first value is a float: the sum starts as that float (not
        // `0.0 + x`, which would turn -0.0 into 0.0).
        (Value::Float(_), Some(_)) if count == 0 => (v, Value::Null),
        (Value::Float(x), Some(s)) => (Value::float(s as f64 + x), Value::Null),
        (Value::Int(_) | Value::Float(_), None) => (arith(BinOp::Add, lo, v), Value::Null),
        _ => return (lo, hi, n),
    };
    (lo, hi, Value::Int(count + 1))
}

/// `avg` from the running `(lo, hi, n)` of [`avg_step`]: NULL over no value.
#[inline]
pub fn avg(lo: Value, hi: Value, n: Value) -> Value {
    let Some(c) = n.as_i64().filter(|&c| c > 0) else { return Value::Null };
    match int_sum(lo, hi) {
        Some(s) => Value::Float(int_avg(s, c as u64)),
        None => lo.as_f64().map_or(Value::Null, |s| Value::float(s / c as f64)),
    }
}

/// The exact int sum held in `(lo, hi)`, or `None` once the sum is a float.
#[inline(always)]
fn int_sum(lo: Value, hi: Value) -> Option<i128> {
    match (lo, hi) {
        (Value::Int(lo), Value::Int(hi)) => Some((i128::from(hi) << 64) | i128::from(lo as u64)),
        _ => None,
    }
}

/// An i128 as (low 64 bits, high 64 bits), both as `Int`s.
#[inline(always)]
fn split(s: i128) -> (Value, Value) {
    (Value::Int(s as i64), Value::Int((s >> 64) as i64))
}

/// `sum / n` rounded to the nearest float (ties to even), for an int sum
/// `sum` of `n >= 1` values, each within i64 (so the result is finite).
///
/// `sum as f64 / n as f64` rounds twice once `|sum|` or `n` passes 2^53, so
/// beyond that the quotient is computed in integers instead: enough of its
/// bits (at least 55) and a sticky bit for the rest, which one correctly
/// rounded `u128 as f64` conversion then rounds as the exact quotient would
/// be; scaling by a power of two is exact.
pub fn int_avg(sum: i128, n: u64) -> f64 {
    debug_assert!(n > 0);
    const EXACT: u128 = 1 << 53;
    let a = sum.unsigned_abs();
    let n = u128::from(n);
    let q = if a < EXACT && n < EXACT {
        // Both exact in f64: IEEE division rounds once, correctly.
        a as f64 / n as f64
    } else if a == 0 {
        0.0
    } else {
        // m = floor(a * 2^shift / n), rem the remainder: 63 more bits per
        // step, each step in u128 (rem < n <= 2^64, m < 2^55 before it).
        // At most two steps: a / n >= 2^-64, so floor(a * 2^126 / n) >= 2^62.
        let (mut m, mut rem, mut shift) = (a / n, a % n, 0u64);
        while m < 1 << 55 {
            let wide = rem << 63;
            m = (m << 63) | (wide / n);
            rem = wide % n;
            shift += 63;
        }
        let sticky = u128::from(rem != 0);
        // 2^-shift (shift <= 126: a normal float, so the product is exact).
        (m | sticky) as f64 * f64::from_bits((1023 - shift) << 52)
    };
    if sum < 0 { -q } else { q }
}

/// Folds a value into a running min (`want = Less`) or max (`Greater`),
/// skipping NULLs and values that do not compare with the current one.
#[inline]
pub fn extreme_step(cur: Value, v: Value, want: Ordering) -> Value {
    if v.is_null() {
        return cur;
    }
    if cur.is_null() {
        return v;
    }
    match v.compare(&cur) {
        Some(o) if o == want => v,
        _ => cur,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn null_and_strings_propagate() {
        assert_eq!(arith(BinOp::Add, Value::Null, Value::Int(1)), Value::Null);
        assert_eq!(arith(BinOp::Add, Value::str("a"), Value::Int(1)), Value::Null);
        assert!(!compare(BinOp::Ne, Value::str("a"), Value::Int(1)));
        assert!(!compare(BinOp::Eq, Value::Null, Value::Null));
        assert!(compare(BinOp::Le, Value::Int(2), Value::Float(2.0)));
    }

    #[test]
    fn min_rem_overflow() {
        assert_eq!(arith(BinOp::Div, Value::Int(i64::MIN), Value::Int(-1)), Value::Null);
        // The remainder fits (0), though the quotient does not.
        assert_eq!(arith(BinOp::Rem, Value::Int(i64::MIN), Value::Int(-1)), Value::Int(0));
        assert_eq!(arith(BinOp::Rem, Value::Int(7), Value::Int(-1)), Value::Int(0));
        assert_eq!(arith(BinOp::Rem, Value::Int(7), Value::Int(0)), Value::Null);
        assert_eq!(neg(Value::Int(i64::MIN)), Value::Null);
        assert_eq!(abs(Value::Int(i64::MIN)), Value::Null);
        assert_eq!(arith(BinOp::Mul, Value::Float(1e300), Value::Float(1e300)), Value::Null);
        assert_eq!(arith(BinOp::Rem, Value::Float(1.0), Value::Float(0.0)), Value::Null);
    }

    #[test]
    fn sums_skip_nulls_and_stick_on_overflow() {
        let (s, n) = sum_step(Value::Null, Value::Null, Value::Null);
        assert_eq!((s, n), (Value::Null, Value::Null));
        let (s, n) = sum_step(s, n, Value::Int(i64::MAX));
        let (s, n) = sum_step(s, n, Value::Int(1));
        assert_eq!(s, Value::Null);
        let (s, _) = sum_step(s, n, Value::Int(1));
        assert_eq!(s, Value::Null, "overflow sticks");
    }

    fn avg_of(vals: &[Value]) -> Value {
        let (mut lo, mut hi, mut n) = (Value::Null, Value::Null, Value::Null);
        for v in vals {
            (lo, hi, n) = avg_step(lo, hi, n, *v);
        }
        avg(lo, hi, n)
    }

    #[test]
    fn avg_of_ints_never_overflows() {
        let (big, max, min) = (Value::Int(5_000_000_000_000_000_000), Value::Int(i64::MAX), Value::Int(i64::MIN));
        assert_eq!(avg_of(&[Value::Int(1), Value::Null, Value::Int(2)]), Value::Float(1.5));
        assert_eq!(avg_of(&[Value::Null, Value::str("a")]), Value::Null);
        assert_eq!(avg_of(&[big, big]), Value::Float(5e18));
        assert_eq!(avg_of(&[max, max, max]), Value::Float(9223372036854775807.0));
        assert_eq!(avg_of(&[min, min]), Value::Float(-9223372036854775808.0));
        assert_eq!(avg_of(&[max, min]), Value::Float(-0.5));
        // i64::MAX + 1 needs the high part; the exact sum is 2^63 + 2^62.
        assert_eq!(avg_of(&[max, Value::Int(1), Value::Int(1 << 62)]), Value::Float(2f64.powi(62)));
        // From the first float on the sum is a float: the exact int sum so
        // far (past i64 here), rounded, plus the float.
        assert_eq!(avg_of(&[max, max, Value::Float(0.5)]), Value::Float(2f64.powi(64) / 3.0));
        assert_eq!(avg_of(&[Value::Float(-0.0), Value::Int(1)]), Value::Float(0.5));
        assert_eq!(avg_of(&[Value::Float(1e308), Value::Float(1e308)]), Value::Null, "a float sum past f64 is NULL");
        // Below 2^53 it is the plain quotient.
        assert_eq!(avg_of(&[Value::Int(1), Value::Int(2), Value::Int(2)]), Value::Float(5.0 / 3.0));
    }

    /// Whether `a / n` is below, at or above `d * 2^j` (exactly).
    fn cmp_quotient(a: u128, n: u128, d: u128, j: i32) -> Ordering {
        let dn = d * n;
        if j >= 0 {
            if j as u32 >= dn.leading_zeros() {
                return Ordering::Less;
            }
            a.cmp(&(dn << j))
        } else {
            if (-j) as u32 >= a.leading_zeros() {
                return Ordering::Greater;
            }
            (a << -j).cmp(&dn)
        }
    }

    #[test]
    fn int_avg_is_the_nearest_float() {
        let mut next = cep_testkit::XorShift64::default().into_fn();
        for i in 0..20_000 {
            let n = match i % 4 {
                0 => next() % 16 + 1,
                1 => (next() >> (next() % 64)) | 1,
                2 => (1 << 53) + next() % 1000,
                _ => next() | (1 << 63),
            };
            // |sum| <= n * 2^63, as for n values within i64.
            let bound = u128::from(n) << 63;
            let a = (((u128::from(next()) << 64) | u128::from(next())) % (bound + 1)) >> (next() % 128);
            let sum = if next() % 2 == 0 { a as i128 } else { -(a as i128) };
            let f = int_avg(sum, n);
            assert_eq!(f < 0.0, sum < 0, "sign of {sum} / {n}");
            let x = f.abs();
            if a == 0 {
                assert_eq!(x, 0.0);
                continue;
            }
            // x = m * 2^k with m a 53-bit integer; its neighbours' midpoints
            // are (2m ± 1) * 2^(k-1), or (4m - 1) * 2^(k-2) below a power of two.
            let bits = x.to_bits();
            let m = u128::from(bits & ((1 << 52) - 1) | 1 << 52);
            let k = ((bits >> 52) as i32) - 1075;
            let (below, above) = if m == 1 << 52 {
                ((4 * m - 1, k - 2), (2 * m + 1, k - 1))
            } else {
                ((2 * m - 1, k - 1), (2 * m + 1, k - 1))
            };
            let n = u128::from(n);
            let lo = cmp_quotient(a, n, below.0, below.1);
            let hi = cmp_quotient(a, n, above.0, above.1);
            assert!(lo != Ordering::Less && hi != Ordering::Greater, "{sum} / {n} gave {f}");
            // On a tie the even mantissa wins.
            if lo == Ordering::Equal || hi == Ordering::Equal {
                assert_eq!(m % 2, 0, "{sum} / {n} gave {f}: a tie goes to even");
            }
        }
    }

    #[test]
    fn extremes() {
        let m = extreme_step(Value::Null, Value::Int(3), Ordering::Less);
        let m = extreme_step(m, Value::Float(2.5), Ordering::Less);
        let m = extreme_step(m, Value::str("x"), Ordering::Less);
        assert_eq!(m, Value::Float(2.5));
    }
}
