//! Expression → closure, with static types.
//!
//! An expression is lowered to a small tree of [`Node`]s (constants, frame
//! slots, registers, operators); the tree is then turned into nested boxed
//! closures once. Common shapes — a slot or register compared with a
//! constant or with each other — get closures of their own, so the per-event
//! cost of `s.vol >= 1000` is one indexed load and one compare.

use cep_core::Value;

use super::ops;
use crate::program::{Bound, BoundOp, Reg, Slot};
use crate::syntax::ast::BinOp;

/// The value of a sub-expression, as seen by the code generator.
#[derive(Clone, Debug)]
pub(crate) enum Node {
    Const(Value),
    Slot(Slot),
    Reg(Reg),
    /// A count register: NULL reads as 0.
    CountReg(Reg),
    /// `b[k].f` inside b's own conditions: the k-th event, the candidate, or NULL.
    NthOwn {
        count: Reg,
        nth: Option<Reg>,
        k: u32,
        cand: Slot,
    },
    /// `avg` from the three registers of [`ops::avg_step`].
    Avg(Reg),
    Neg(Box<Node>),
    Abs(Box<Node>),
    Not(Box<Node>),
    Arith(BinOp, Box<Node>, Box<Node>),
    Cmp(BinOp, Box<Node>, Box<Node>),
    And(Box<Node>, Box<Node>),
    Or(Box<Node>, Box<Node>),
}

pub(crate) type ValFn = Box<dyn Fn(&[Value], &[Value]) -> Value + Send + Sync>;
pub(crate) type BoolFn = Box<dyn Fn(&[Value], &[Value]) -> bool + Send + Sync>;

/// Lowers a node to a value closure over (frame, registers).
pub(crate) fn value_fn(node: &Node) -> ValFn {
    match node.clone() {
        Node::Const(v) => Box::new(move |_, _| v),
        Node::Slot(s) => {
            let s = s as usize;
            Box::new(move |f, _| f[s])
        }
        Node::Reg(r) => {
            let r = r as usize;
            Box::new(move |_, g| g[r])
        }
        Node::CountReg(r) => {
            let r = r as usize;
            Box::new(move |_, g| match g[r] {
                Value::Null => Value::Int(0),
                v => v,
            })
        }
        Node::NthOwn { count, nth, k, cand } => {
            let (count, cand) = (count as usize, cand as usize);
            let nth = nth.map(|r| r as usize);
            Box::new(move |f, g| {
                let c = g[count].as_i64().unwrap_or(0) as u64;
                let k = u64::from(k);
                if k <= c {
                    nth.map_or(Value::Null, |r| g[r])
                } else if k == c + 1 {
                    f[cand]
                } else {
                    Value::Null
                }
            })
        }
        Node::Avg(r) => {
            let r = r as usize;
            Box::new(move |_, g| ops::avg(g[r], g[r + 1], g[r + 2]))
        }
        Node::Neg(a) => {
            let a = value_fn(&a);
            Box::new(move |f, g| ops::neg(a(f, g)))
        }
        Node::Abs(a) => {
            let a = value_fn(&a);
            Box::new(move |f, g| ops::abs(a(f, g)))
        }
        Node::Arith(op, a, b) => arith_fn(op, &a, &b),
        Node::Not(_) | Node::Cmp(..) | Node::And(..) | Node::Or(..) => {
            let p = bool_fn(node);
            Box::new(move |f, g| Value::Bool(p(f, g)))
        }
    }
}

/// A sub-expression simple enough to evaluate inline, without a call:
/// a constant, a slot, a register, or one of those combined with a
/// constant by an arithmetic operator (`s.price * 100`).
#[derive(Clone, Copy, Debug)]
enum Leaf {
    Const(Value),
    Slot(usize),
    Reg(usize),
    SlotOp(usize, BinOp, Value),
    RegOp(usize, BinOp, Value),
}

impl Leaf {
    fn of(node: &Node) -> Option<Leaf> {
        let simple = |n: &Node| match n {
            Node::Const(v) => Some(Leaf::Const(*v)),
            Node::Slot(s) => Some(Leaf::Slot(*s as usize)),
            Node::Reg(r) => Some(Leaf::Reg(*r as usize)),
            _ => None,
        };
        match node {
            Node::Arith(op, a, b) => match (simple(a)?, simple(b)?) {
                (Leaf::Slot(s), Leaf::Const(c)) => Some(Leaf::SlotOp(s, *op, c)),
                (Leaf::Reg(r), Leaf::Const(c)) => Some(Leaf::RegOp(r, *op, c)),
                _ => None,
            },
            n => simple(n),
        }
    }

    #[inline(always)]
    fn eval(self, f: &[Value], g: &[Value]) -> Value {
        match self {
            Leaf::Const(v) => v,
            Leaf::Slot(s) => f[s],
            Leaf::Reg(r) => g[r],
            Leaf::SlotOp(s, op, c) => ops::arith(op, f[s], c),
            Leaf::RegOp(r, op, c) => ops::arith(op, g[r], c),
        }
    }
}

fn arith_fn(op: BinOp, a: &Node, b: &Node) -> ValFn {
    match (Leaf::of(a), Leaf::of(b)) {
        (Some(la), Some(lb)) => Box::new(move |f, g| ops::arith(op, la.eval(f, g), lb.eval(f, g))),
        _ => {
            let (a, b) = (value_fn(a), value_fn(b));
            Box::new(move |f, g| ops::arith(op, a(f, g), b(f, g)))
        }
    }
}

/// Lowers a node to a condition closure: true only for `Bool(true)`.
pub(crate) fn bool_fn(node: &Node) -> BoolFn {
    match node {
        Node::Const(v) => {
            let t = matches!(v, Value::Bool(true));
            Box::new(move |_, _| t)
        }
        Node::Not(a) => {
            let a = bool_fn(a);
            Box::new(move |f, g| !a(f, g))
        }
        Node::And(a, b) => {
            let (a, b) = (bool_fn(a), bool_fn(b));
            Box::new(move |f, g| a(f, g) && b(f, g))
        }
        Node::Or(a, b) => {
            let (a, b) = (bool_fn(a), bool_fn(b));
            Box::new(move |f, g| a(f, g) || b(f, g))
        }
        Node::Cmp(op, a, b) => cmp_fn(*op, a, b),
        other => {
            let v = value_fn(other);
            Box::new(move |f, g| matches!(v(f, g), Value::Bool(true)))
        }
    }
}

/// The [`Bound`] a condition is, when it compares a frame value with a
/// number (`a.x > 5`, `5 <= a.x`).
pub(crate) fn bound_of(node: &Node) -> Option<Bound> {
    let Node::Cmp(op, a, b) = node else { return None };
    let (slot, value, flipped) = match (&**a, &**b) {
        (Node::Slot(s), Node::Const(v)) => (*s, *v, false),
        (Node::Const(v), Node::Slot(s)) => (*s, *v, true),
        _ => return None,
    };
    match value {
        Value::Int(_) => {}
        Value::Float(f) if f.is_finite() => {}
        _ => return None,
    }
    let op = match (op, flipped) {
        (BinOp::Lt, false) | (BinOp::Gt, true) => BoundOp::Lt,
        (BinOp::Le, false) | (BinOp::Ge, true) => BoundOp::Le,
        (BinOp::Gt, false) | (BinOp::Lt, true) => BoundOp::Gt,
        (BinOp::Ge, false) | (BinOp::Le, true) => BoundOp::Ge,
        _ => return None,
    };
    Some(Bound { slot, op, value })
}

fn cmp_fn(op: BinOp, a: &Node, b: &Node) -> BoolFn {
    // One closure per comparison whose sides are simple (the common
    // `x.f >= 1000`, `r.price * 100 >= PREV(r.price) * 102`): no inner calls.
    match (Leaf::of(a), Leaf::of(b)) {
        (Some(la), Some(lb)) => leaf_cmp(op, la, lb),
        (Some(la), None) => {
            let b = value_fn(b);
            Box::new(move |f, g| ops::compare(op, la.eval(f, g), b(f, g)))
        }
        (None, Some(lb)) => {
            let a = value_fn(a);
            Box::new(move |f, g| ops::compare(op, a(f, g), lb.eval(f, g)))
        }
        (None, None) => {
            let (a, b) = (value_fn(a), value_fn(b));
            Box::new(move |f, g| ops::compare(op, a(f, g), b(f, g)))
        }
    }
}

/// An int side of a comparison as the fast path reads it: a frame slot or a
/// register times `mul` plus `add` (`s.price * 100`, `a.x - 5`, plain
/// `s.vol` with 1 and 0), or a constant. One shape for every arithmetic
/// operator keeps the number of compiled comparison closures small (three
/// side kinds, four operators) with no operator dispatch per event.
trait IntSide: Copy + Send + Sync + 'static {
    fn int(self, f: &[Value], g: &[Value]) -> Option<i64>;
}

/// `x * mul + add` for `x` a frame slot (`REGS` false) or a register.
#[derive(Clone, Copy)]
struct Affine<const REGS: bool> {
    at: usize,
    mul: i64,
    add: i64,
}

#[derive(Clone, Copy)]
struct IntConst(i64);

impl<const REGS: bool> IntSide for Affine<REGS> {
    #[inline(always)]
    fn int(self, f: &[Value], g: &[Value]) -> Option<i64> {
        match if REGS { g[self.at] } else { f[self.at] } {
            Value::Int(x) => x.checked_mul(self.mul)?.checked_add(self.add),
            _ => None,
        }
    }
}

impl IntSide for IntConst {
    #[inline(always)]
    fn int(self, _: &[Value], _: &[Value]) -> Option<i64> {
        Some(self.0)
    }
}

/// A leaf in its int fast-path shape, when it has one.
#[derive(Clone, Copy)]
enum Side {
    Slot(Affine<false>),
    Reg(Affine<true>),
    Const(IntConst),
}

impl Side {
    fn of(leaf: Leaf) -> Option<Side> {
        let lin = |op: BinOp, c: Value| -> Option<(i64, i64)> {
            let Value::Int(c) = c else { return None };
            match op {
                BinOp::Add => Some((1, c)),
                BinOp::Sub => Some((1, c.checked_neg()?)),
                BinOp::Mul => Some((c, 0)),
                _ => None,
            }
        };
        Some(match leaf {
            Leaf::Const(Value::Int(c)) => Side::Const(IntConst(c)),
            Leaf::Const(_) => return None,
            Leaf::Slot(at) => Side::Slot(Affine { at, mul: 1, add: 0 }),
            Leaf::Reg(at) => Side::Reg(Affine { at, mul: 1, add: 0 }),
            Leaf::SlotOp(at, op, c) => {
                let (mul, add) = lin(op, c)?;
                Side::Slot(Affine { at, mul, add })
            }
            Leaf::RegOp(at, op, c) => {
                let (mul, add) = lin(op, c)?;
                Side::Reg(Affine { at, mul, add })
            }
        })
    }
}

/// `la op lb` over int sides `a` and `b`, with `op` one of `=`, `!=`,
/// `<`, `<=` (callers swap the sides for `>` and `>=`); the generic path
/// (floats, NULL, overflow) evaluates the original leaves with the original
/// operator.
fn int_cmp<A: IntSide, B: IntSide>(op: BinOp, a: A, b: B, orig: (BinOp, Leaf, Leaf)) -> BoolFn {
    // Out of line, so that the fast path saves no registers.
    #[cold]
    #[inline(never)]
    fn slow(orig: &(BinOp, Leaf, Leaf), f: &[Value], g: &[Value]) -> bool {
        let (op, la, lb) = *orig;
        ops::compare(op, la.eval(f, g), lb.eval(f, g))
    }
    macro_rules! with {
        ($x:ident, $y:ident, $e:expr) => {
            Box::new(move |f, g| match (a.int(f, g), b.int(f, g)) {
                (Some($x), Some($y)) => $e,
                _ => slow(&orig, f, g),
            })
        };
    }
    match op {
        BinOp::Eq => with!(x, y, x == y),
        BinOp::Ne => with!(x, y, x != y),
        BinOp::Lt => with!(x, y, x < y),
        _ => with!(x, y, x <= y),
    }
}

/// [`int_cmp`] for the side kinds of `a` and `b`.
fn side_cmp(op: BinOp, a: Side, b: Side, orig: (BinOp, Leaf, Leaf)) -> BoolFn {
    macro_rules! pick {
        ($x:expr) => {
            match b {
                Side::Slot(y) => int_cmp(op, $x, y, orig),
                Side::Reg(y) => int_cmp(op, $x, y, orig),
                Side::Const(y) => int_cmp(op, $x, y, orig),
            }
        };
    }
    match a {
        Side::Slot(x) => pick!(x),
        Side::Reg(x) => pick!(x),
        Side::Const(x) => pick!(x),
    }
}

/// A comparison of two leaves, with the operator fixed at compile time and
/// a fast path when both sides are ints (the generic path handles floats,
/// NULL, strings and overflow).
fn leaf_cmp(op: BinOp, la: Leaf, lb: Leaf) -> BoolFn {
    if let (Some(a), Some(b)) = (Side::of(la), Side::of(lb)) {
        let orig = (op, la, lb);
        match op {
            BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le => return side_cmp(op, a, b, orig),
            BinOp::Gt => return side_cmp(BinOp::Lt, b, a, orig),
            BinOp::Ge => return side_cmp(BinOp::Le, b, a, orig),
            _ => {}
        }
    }
    // Other shapes (a float or string constant, `/`, `%`) have no int fast
    // path: the generic comparison, still with no inner calls.
    Box::new(move |f, g| ops::compare(op, la.eval(f, g), lb.eval(f, g)))
}

/// Static type of an expression, as far as the schema tells.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ty {
    Int,
    Float,
    /// Int or float.
    Num,
    Bool,
    Str,
    /// Always NULL.
    Null,
    /// Unknown.
    Any,
}

impl Ty {
    pub(crate) fn is_numeric(self) -> bool {
        matches!(self, Ty::Int | Ty::Float | Ty::Num)
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Ty::Int => "an int",
            Ty::Float => "a float",
            Ty::Num => "a number",
            Ty::Bool => "a bool",
            Ty::Str => "a string",
            Ty::Null => "NULL",
            Ty::Any => "a value",
        }
    }

    /// Result type of arithmetic.
    pub(crate) fn arith(self, other: Ty) -> Ty {
        match (self, other) {
            (Ty::Null, _) | (_, Ty::Null) => Ty::Null,
            (Ty::Int, Ty::Int) => Ty::Int,
            (Ty::Float, t) | (t, Ty::Float) if t.is_numeric() => Ty::Float,
            (a, b) if a.is_numeric() && b.is_numeric() => Ty::Num,
            _ => Ty::Any,
        }
    }

    /// Whether two known types can never compare (string vs number, …).
    pub(crate) fn incomparable(self, other: Ty) -> bool {
        let class = |t: Ty| match t {
            Ty::Int | Ty::Float | Ty::Num => Some(0),
            Ty::Bool => Some(1),
            Ty::Str => Some(2),
            Ty::Null | Ty::Any => None,
        };
        matches!((class(self), class(other)), (Some(a), Some(b)) if a != b)
    }
}
