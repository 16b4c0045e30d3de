//! Many patterns as one: consecutive queries that differ only in
//! one-variable conditions (`a.speed > 5.0` in one, `a.speed > 5.1` in the
//! next) run as one program, which evaluates every member's conditions
//! once per event and tells, with each match, which members it is a match
//! of (DESIGN.md §2.10, "Many patterns").
//!
//! Why: a hundred copies of a pattern with different thresholds (Wayeb's
//! scalability run, a user's rules per customer) would otherwise cost a
//! hundred engines, each looking up the event's partition and stepping
//! its own runs; shared, the lookup and the steps happen once and the
//! cost per member is one call of each of its own conditions.
//!
//! # When it is exact
//!
//! The shared program is the members' common pattern with their own
//! conditions replaced by one: "some member accepts every event bound so
//! far". Under strict contiguity with single-event elements and no
//! negation or skip clause, a member's matches are exactly the sequences
//! of adjacent events that satisfy its conditions, and its runs never
//! interact; so its matches are exactly the shared program's matches
//! whose member set holds it, at most one per event, and a run no member
//! accepts can die at once. Anything else (another strategy, a Kleene or
//! optional element, a negation, a skip clause, `PREV`, a remote
//! condition, `EMIT x.*`) keeps its own engine. Members are consecutive
//! statements, so that emitting a shared match for each member in member
//! order gives the statements' order.
//!
//! # Examples
//! ```
//! use cep_core::Schema;
//! use cep_nfa::compile::{compile, Options};
//! use cep_nfa::share::share;
//!
//! let mut schema = Schema::new();
//! let text = "QUERY slow PATTERN SEQ(AIS a, AIS b) WHERE strict-contiguity AND [mmsi] AND a.speed > 5 AND b.speed > 5;
//!             QUERY fast PATTERN SEQ(AIS a, AIS b) WHERE strict-contiguity AND [mmsi] AND a.speed > 9 AND b.speed > 9;
//!             QUERY any PATTERN SEQ(AIS a, AIS b)";
//! let programs = compile(text, &mut schema, &Options::default()).unwrap().programs;
//! let families = share(programs);
//! assert_eq!(families.len(), 2);
//! assert_eq!(families[0].members, [0, 1]);
//! assert_eq!(families[1].members, [2]);
//! ```

use std::collections::HashSet;
use std::sync::Arc;

use cep_core::{EmitValue, Match, Value};

use crate::engines::StreamEvent;
use crate::program::{
    Bound, BoundOp, Cond, EmitItem, EmitWhat, FrameSlot, Program, Quant, Reg, RegOp, RegUpdate, SharedFramePred,
    SkipTo, Slot, Strategy,
};

/// The most members one shared program holds (the bits of its member set).
pub const MAX_MEMBERS: usize = 64;

/// The widest frame (values read from an event) a shared program may have.
const MAX_FRAME: usize = 16;

/// The name of the shared program's last `EMIT` item: its member set.
const MEMBERS_ITEM: &str = "(members)";

/// One program standing for one or more consecutive queries.
pub struct Family<E> {
    /// The program to run: a member's own when it is alone.
    pub program: Program<E>,
    /// The queries it stands for, as indices into the programs given to
    /// [`share`], ascending: bit `b` of a match's member set stands for
    /// `members[b]`.
    pub members: Vec<usize>,
}

impl<E> Family<E> {
    /// True when the program is shared (its matches carry a member set).
    pub fn is_shared(&self) -> bool {
        self.members.len() > 1
    }
}

impl<E> std::fmt::Debug for Family<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Family").field("program", &self.program.name).field("members", &self.members).finish()
    }
}

/// Takes the member set off a shared program's match (see
/// [`Family::members`]), leaving the members' own `EMIT` values.
pub fn take_members(m: &mut Match) -> u64 {
    match m.emit.pop() {
        Some(EmitValue::Value(Value::Int(bits))) => bits as u64,
        _ => 0,
    }
}

/// Which of `programs` would share a program, without building it: the
/// members of each family, in order (see [`share`]).
///
/// # Examples
/// ```
/// use cep_core::Schema;
/// use cep_nfa::compile::{compile, Options};
/// use cep_nfa::share::groups;
///
/// let text: String = (1..=3)
///     .map(|t| format!("PATTERN SEQ(S a, S b) WHERE strict-contiguity AND a.x > {t} AND b.x > {t};"))
///     .collect();
/// let programs = compile(&text, &mut Schema::new(), &Options::default()).unwrap().programs;
/// assert_eq!(groups(&programs), [vec![0, 1, 2]]);
/// ```
pub fn groups<E>(programs: &[Program<E>]) -> Vec<Vec<usize>> {
    let mut out: Vec<Vec<usize>> = Vec::new();
    let mut group: Vec<usize> = Vec::new();
    for (i, p) in programs.iter().enumerate() {
        let can = shareable(p);
        let joins =
            can && group.first().is_some_and(|&head| group.len() < MAX_MEMBERS && same_shape(&programs[head], p));
        if !joins && !group.is_empty() {
            out.push(std::mem::take(&mut group));
        }
        match can {
            true => group.push(i),
            false => out.push(vec![i]),
        }
    }
    if !group.is_empty() {
        out.push(group);
    }
    out
}

/// Groups `programs` into families, in order: each run of consecutive
/// programs that can share (see the module doc) becomes one program, up
/// to [`MAX_MEMBERS`] each; every other program stays alone.
pub fn share<E: StreamEvent + 'static>(programs: Vec<Program<E>>) -> Vec<Family<E>> {
    let groups = groups(&programs);
    let mut programs = programs.into_iter();
    groups
        .into_iter()
        .map(|members| {
            let taken: Vec<Program<E>> = programs.by_ref().take(members.len()).collect();
            match taken.len() {
                1 => Family { program: taken.into_iter().next().expect("one program"), members },
                _ => Family { program: merge(taken), members },
            }
        })
        .collect()
}

/// A condition that reads only its candidate event's frame.
fn one_variable<E>(c: &Cond<E>) -> bool {
    c.earliest.is_none() && !c.own_regs && !c.skip_first && c.frame_pred.is_some()
}

/// The frame's field indices when every slot reads a field.
fn frame_fields<E>(p: &Program<E>) -> Option<Vec<u32>> {
    p.frame.iter().map(|s| if let FrameSlot::At(i) = s { Some(*i) } else { None }).collect()
}

/// Whether a program can be a member at all.
fn shareable<E>(p: &Program<E>) -> bool {
    p.strategy == Strategy::Strict
        && p.skip == SkipTo::None
        && p.negations.is_empty()
        && p.trailing.is_none()
        && p.history.is_empty()
        && p.object.is_none()
        && p.frame.len() <= MAX_FRAME
        && frame_fields(p).is_some()
        && !p.elements.is_empty()
        && p.elements.iter().all(|e| e.quant == Quant::One && e.remote.is_empty())
        && p.emit.iter().all(|item| matches!(item.what, EmitWhat::Value(_)))
}

/// Whether two shareable programs differ only in one-variable conditions.
fn same_shape<E>(a: &Program<E>, b: &Program<E>) -> bool {
    let key = |p: &Program<E>| match &p.key {
        None => None,
        Some((name, FrameSlot::At(i))) => Some((name.clone(), Some(*i))),
        Some((name, _)) => Some((name.clone(), None)),
    };
    let multi = |conds: &[Cond<E>]| -> Vec<String> {
        conds.iter().filter(|c| !one_variable(c)).map(|c| c.text.clone()).collect()
    };
    a.select == b.select
        && a.window == b.window
        && key(a) == key(b)
        && key(a).is_none_or(|(_, slot)| slot.is_some())
        && frame_fields(a) == frame_fields(b)
        && a.regs == b.regs
        && a.reg_names == b.reg_names
        && a.accepts_by_kind == b.accepts_by_kind
        && a.emit.len() == b.emit.len()
        && a.emit.iter().zip(&b.emit).all(|(x, y)| x.name == y.name && x.reads == y.reads)
        && a.elements.len() == b.elements.len()
        && a.elements.iter().zip(&b.elements).all(|(x, y)| {
            x.var == y.var
                && x.types == y.types
                && x.within == y.within
                && x.updates == y.updates
                && multi(&x.conds) == multi(&y.conds)
                && x.completion.len() == y.completion.len()
                && x.completion.iter().zip(&y.completion).all(|(c, d)| c.text == d.text && c.at_first == d.at_first)
        })
}

/// The shared program of `members` (at least two, of one shape): the
/// first member's program with the one-variable conditions not common to
/// all replaced, per element, by "some member accepts every event bound so
/// far"; each member's set is a frame value computed once per event and
/// kept in a register, and their conjunction is the last `EMIT` value.
fn merge<E: StreamEvent + 'static>(mut members: Vec<Program<E>>) -> Program<E> {
    let n = members.len();
    let elements = members[0].elements.len();
    let fields = frame_fields(&members[0]).expect("a shareable program reads fields only");
    // own[j]: which members accept an event as element j, by their own
    // conditions there.
    let mut own: Vec<Accepts> = Vec::with_capacity(elements);
    for j in 0..elements {
        let texts = |p: &Program<E>| -> HashSet<String> {
            p.elements[j].conds.iter().filter(|c| one_variable(c)).map(|c| c.text.clone()).collect()
        };
        let mut common = texts(&members[0]);
        for p in &members[1..] {
            let t = texts(p);
            common.retain(|c| t.contains(c));
        }
        let mut accepts = Accepts::new(n);
        for (m, p) in members.iter_mut().enumerate() {
            let conds = std::mem::take(&mut p.elements[j].conds);
            let (keep, mine): (Vec<Cond<E>>, Vec<Cond<E>>) =
                conds.into_iter().partition(|c| !one_variable(c) || common.contains(&c.text));
            for c in mine {
                accepts.add(m, c);
            }
            p.elements[j].conds = keep;
        }
        accepts.finish();
        own.push(accepts);
    }
    let names: Vec<String> = members.iter().map(|p| p.name.clone()).collect();
    let mut shared = members.swap_remove(0);
    let mut set_regs: Vec<Reg> = Vec::with_capacity(elements);
    for (j, accepts) in own.into_iter().enumerate() {
        let slot = shared.frame.len() as Slot;
        let fields = fields.clone();
        shared.frame.push(FrameSlot::Field(Box::new(move |e: &E| {
            let mut frame = [Value::Null; MAX_FRAME];
            for (v, &f) in frame.iter_mut().zip(&fields) {
                *v = e.field(f);
            }
            Value::Int(accepts.of(&frame[..fields.len()]) as i64)
        })));
        let var = shared.elements[j].var.clone();
        shared.slot_names.push(format!("queries accepting {var}"));
        let reg = shared.regs as Reg;
        shared.regs += 1;
        shared.reg_names.push(format!("queries accepting {var}"));
        shared.elements[j].updates.push(RegUpdate { reg, op: RegOp::Last(slot) });
        let earlier = set_regs.clone();
        let test: SharedFramePred = Arc::new(move |frame: &[Value], regs: &[Value]| {
            let mut set = bits(frame[slot as usize]);
            for &r in &earlier {
                set &= bits(regs[r as usize]);
            }
            set != 0
        });
        let earliest = if j == 0 { None } else { Some(0) };
        let text = format!("one of {n} queries accepts every event so far");
        shared.elements[j].conds.push(Cond::from_frame(test, false, earliest, false, text));
        set_regs.push(reg);
    }
    let all = set_regs.clone();
    shared.emit.push(EmitItem {
        name: MEMBERS_ITEM.to_owned(),
        what: EmitWhat::Value(Box::new(move |regs: &[Value]| {
            Value::Int(all.iter().fold(u64::MAX, |set, &r| set & bits(regs[r as usize])) as i64)
        })),
        reads: "the member sets".to_owned(),
    });
    shared.name = format!("{} … {} ({n} queries)", names[0], names[n - 1]);
    shared.finish()
}

/// Which members accept an event at one element: conditions comparing a
/// frame value with a constant through [`Ladder`]s (a binary search, not
/// a call per member: DESIGN.md §2.10's index of constants), the others
/// one by one.
struct Accepts {
    /// Every member's bit.
    all: u64,
    ladders: Vec<Ladder>,
    /// Each member's other conditions, by bit.
    general: Vec<(u64, Vec<SharedFramePred>)>,
}

impl Accepts {
    fn new(members: usize) -> Accepts {
        let all = if members == 64 { u64::MAX } else { (1u64 << members) - 1 };
        Accepts { all, ladders: Vec::new(), general: Vec::new() }
    }

    /// Adds member `m`'s condition `c` (a one-variable one).
    fn add<E>(&mut self, m: usize, c: Cond<E>) {
        let bit = 1u64 << m;
        if let Some(b) = c.bound {
            let ladder = match self.ladders.iter_mut().position(|l| l.slot == b.slot && l.op == b.op) {
                Some(i) => &mut self.ladders[i],
                None => {
                    self.ladders.push(Ladder {
                        slot: b.slot,
                        op: b.op,
                        rungs: Vec::new(),
                        prefix: Vec::new(),
                        members: 0,
                    });
                    self.ladders.last_mut().expect("just pushed")
                }
            };
            // A member on a ladder once: a second bound of the same kind
            // is tested one by one.
            if ladder.members & bit == 0 {
                ladder.members |= bit;
                ladder.rungs.push((b.value, bit));
                return;
            }
        }
        let f = c.frame_pred.expect("a one-variable condition reads the frame");
        match self.general.iter_mut().find(|(b, _)| *b == bit) {
            Some((_, fs)) => fs.push(f),
            None => self.general.push((bit, vec![f])),
        }
    }

    /// Sorts the ladders' constants.
    fn finish(&mut self) {
        for l in &mut self.ladders {
            l.rungs.sort_by(|a, b| a.0.compare(&b.0).expect("numeric constants compare"));
            l.prefix = std::iter::once(0)
                .chain(l.rungs.iter().scan(0u64, |acc, &(_, bit)| {
                    *acc |= bit;
                    Some(*acc)
                }))
                .collect();
        }
    }

    /// The members whose own conditions hold for an event of frame `frame`.
    #[inline]
    fn of(&self, frame: &[Value]) -> u64 {
        let mut set = self.all;
        for l in &self.ladders {
            set &= l.accepting(frame[l.slot as usize]) | !l.members;
        }
        for (bit, conds) in &self.general {
            if set & bit != 0 && !conds.iter().all(|c| c(frame, &[])) {
                set &= !bit;
            }
        }
        set
    }
}

/// The constants of one comparison (`slot op constant`) across members,
/// ascending, with the members of each prefix.
struct Ladder {
    slot: Slot,
    op: BoundOp,
    /// (constant, member bit), ascending by constant.
    rungs: Vec<(Value, u64)>,
    /// `prefix[i]`: the members of the first `i` rungs.
    prefix: Vec<u64>,
    /// Every member on the ladder.
    members: u64,
}

impl Ladder {
    /// The members on the ladder for which `v op constant` holds.
    #[inline]
    fn accepting(&self, v: Value) -> u64 {
        use std::cmp::Ordering::{Greater, Less};
        match v {
            Value::Int(_) => {}
            Value::Float(f) if !f.is_nan() => {}
            // NULL, a string or a bool compares with no number; NaN with
            // ints only, and not in their order: rung by rung.
            _ => {
                let holds = |&(value, _): &(Value, u64)| Bound { slot: self.slot, op: self.op, value }.holds(v);
                return self.rungs.iter().filter(|r| holds(r)).fold(0, |set, r| set | r.1);
            }
        }
        // Constants below `v`, and at or below it.
        let below = |c: &(Value, u64)| c.0.compare(&v) == Some(Less);
        let at_or_below = |c: &(Value, u64)| c.0.compare(&v) != Some(Greater);
        match self.op {
            BoundOp::Gt => self.prefix[self.rungs.partition_point(below)],
            BoundOp::Ge => self.prefix[self.rungs.partition_point(at_or_below)],
            BoundOp::Lt => self.members & !self.prefix[self.rungs.partition_point(at_or_below)],
            BoundOp::Le => self.members & !self.prefix[self.rungs.partition_point(below)],
        }
    }
}

/// A member set held as a value.
#[inline]
fn bits(v: Value) -> u64 {
    match v {
        Value::Int(b) => b as u64,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::{Options, compile};
    use cep_core::Schema;

    fn families(text: &str) -> Vec<Vec<usize>> {
        let mut schema = Schema::new();
        let programs = compile(text, &mut schema, &Options::default()).unwrap().programs;
        share(programs).into_iter().map(|f| f.members).collect()
    }

    fn sv(t: &str, extra: &str) -> String {
        format!("PATTERN SEQ(S a, S b) WHERE strict-contiguity AND [k] AND a.x > {t} AND b.x > {t}{extra};\n")
    }

    #[test]
    fn only_consecutive_queries_of_one_shape_share() {
        let text = [sv("1", ""), sv("2", ""), sv("3", " AND b.y > a.y"), sv("4", " AND b.y > a.y"), sv("5", "")];
        assert_eq!(families(&text.concat()), [vec![0, 1], vec![2, 3], vec![4]]);
    }

    #[test]
    fn other_strategies_and_constructs_keep_their_engine() {
        let text = [
            "PATTERN SEQ(S a, S b) WHERE [k] AND a.x > 1;\n",
            "PATTERN SEQ(S a, S b) WHERE [k] AND a.x > 2;\n",
            "PATTERN SEQ(S a, S+ b[]) WHERE strict-contiguity AND [k] AND a.x > 1;\n",
            "PATTERN SEQ(S a, S+ b[]) WHERE strict-contiguity AND [k] AND a.x > 2;\n",
            "PATTERN SEQ(S a, NOT T n, S b) WHERE strict-contiguity AND a.x > 1;\n",
            "PATTERN SEQ(S a, NOT T n, S b) WHERE strict-contiguity AND a.x > 2;\n",
        ];
        assert_eq!(families(&text.concat()), (0..6).map(|i| vec![i]).collect::<Vec<_>>());
    }

    #[test]
    fn different_windows_keys_or_fields_do_not_share() {
        let text = [
            "PATTERN SEQ(S a, S b) WHERE strict-contiguity AND [k] AND a.x > 1 WITHIN 10;\n",
            "PATTERN SEQ(S a, S b) WHERE strict-contiguity AND [k] AND a.x > 2 WITHIN 20;\n",
            "PATTERN SEQ(S a, S b) WHERE strict-contiguity AND [j] AND a.x > 2 WITHIN 20;\n",
            "PATTERN SEQ(S a, S b) WHERE strict-contiguity AND [j] AND a.y > 2 WITHIN 20;\n",
        ];
        assert_eq!(families(&text.concat()), (0..4).map(|i| vec![i]).collect::<Vec<_>>());
    }

    #[test]
    fn ladders_agree_with_the_conditions_they_index() {
        let consts = [Value::Int(3), Value::Float(2.5), Value::Int(-1), Value::Float(3.0), Value::Int(7)];
        let values = [
            Value::Null,
            Value::Int(-5),
            Value::Int(-1),
            Value::Float(2.5),
            Value::Int(3),
            Value::Float(3.5),
            Value::Int(7),
            Value::Int(100),
            Value::Float(f64::NAN),
            Value::str("a"),
        ];
        for op in [BoundOp::Lt, BoundOp::Le, BoundOp::Gt, BoundOp::Ge] {
            let mut acc = Accepts::new(consts.len());
            for (m, &value) in consts.iter().enumerate() {
                let bound = Bound { slot: 0, op, value };
                let f: SharedFramePred = Arc::new(move |fr: &[Value], _: &[Value]| bound.holds(fr[0]));
                acc.add::<cep_core::Event>(
                    m,
                    Cond::from_frame(f, false, None, false, String::new()).with_bound(Some(bound)),
                );
            }
            acc.finish();
            assert_eq!(acc.general.len(), 0, "every condition is on the ladder");
            for v in values {
                let want = consts
                    .iter()
                    .enumerate()
                    .fold(0u64, |set, (m, &value)| set | (u64::from(Bound { slot: 0, op, value }.holds(v)) << m));
                assert_eq!(acc.of(&[v]), want, "{op:?} {v:?}");
            }
        }
    }

    #[test]
    fn a_family_holds_at_most_64() {
        let text: String = (0..70).map(|i| sv(&i.to_string(), "")).collect();
        let sizes: Vec<usize> = families(&text).iter().map(Vec::len).collect();
        assert_eq!(sizes, [64, 6]);
    }
}
