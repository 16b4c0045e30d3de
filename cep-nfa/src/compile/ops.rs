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

/// `avg` from a running `(sum, n)`.
#[inline]
pub fn avg(sum: Value, n: Value) -> Value {
    match (sum.as_f64(), n.as_i64()) {
        (Some(s), Some(c)) if c > 0 => Value::float(s / c as f64),
        _ => Value::Null,
    }
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
        assert_eq!(arith(BinOp::Rem, Value::Int(i64::MIN), Value::Int(-1)), Value::Null);
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
        assert_eq!(avg(Value::Int(3), Value::Int(2)), Value::Float(1.5));
    }

    #[test]
    fn extremes() {
        let m = extreme_step(Value::Null, Value::Int(3), Ordering::Less);
        let m = extreme_step(m, Value::Float(2.5), Ordering::Less);
        let m = extreme_step(m, Value::str("x"), Ordering::Less);
        assert_eq!(m, Value::Float(2.5));
    }
}
