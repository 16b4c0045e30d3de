//! `EMIT` on the stack engine's matches. Every element binds exactly one
//! event, so a match's registers are a function of its path: each element's
//! register updates applied to its entry's frame, as the run engine applies
//! them when the element binds. Objects for `x.*` items are kept beside the
//! entries of the elements they name.

use cep_core::{EmitValue, Value};

use crate::program::Program;

use super::stacks::Part;

/// Sets `regs` to the registers of the match along `path` (absolute index
/// by element): each element's updates applied to its entry's frame, in
/// `SEQ` order. Only needed where the construction did not compute them
/// on the way (direct construction, which checks no conditions).
fn path_regs<E>(prog: &Program<E>, part: &Part, width: usize, path: impl Fn(usize) -> u64, regs: &mut [Value]) {
    regs.fill(Value::Null);
    for (k, el) in prog.elements.iter().enumerate() {
        let frame = part.stacks[k].frame(path(k), width);
        crate::engines::run::apply_updates(&el.updates, regs, frame, 0);
    }
}

/// Sets `out` to the `EMIT` values of the match along `path` whose
/// registers are `regs`.
fn emit_values<E>(
    prog: &Program<E>,
    part: &Part,
    path: impl Fn(usize) -> u64,
    regs: &[Value],
    out: &mut Vec<EmitValue>,
) {
    out.clear();
    prog.emit_values(
        regs,
        // `qualifies` admits single-event elements only, and `new` keeps
        // the objects of every element an `x.*` item names.
        |elem, _| EmitValue::Event(part.stacks[elem].object(path(elem)).clone()),
        out,
    );
}

/// The `EMIT` values of a match built by direct construction: `prefix`
/// (absolute indices of elements `0..n - 1`) then `last` on the last
/// stack. Its registers are computed here, into `regs`. Kept out of line
/// so that the enumeration loop of a query without `EMIT` stays as tight
/// as it was.
#[inline(never)]
pub(super) fn direct_emit<E>(
    prog: &Program<E>,
    part: &Part,
    width: usize,
    prefix: &[u64],
    last: u64,
    regs: &mut [Value],
    out: &mut Vec<EmitValue>,
) {
    let at = |k: usize| if k < prefix.len() { prefix[k] } else { last };
    path_regs(prog, part, width, at, regs);
    emit_values(prog, part, at, regs, out);
}

/// The `EMIT` values of a match built by per-event or batch construction,
/// whose registers `regs` were computed as its conditions were checked:
/// `prefix` then `last`, as in [`direct_emit`]. Out of line, as that one.
#[inline(never)]
pub(super) fn built_emit<E>(
    prog: &Program<E>,
    part: &Part,
    prefix: &[u64],
    last: u64,
    regs: &[Value],
    out: &mut Vec<EmitValue>,
) {
    emit_values(prog, part, |k| if k < prefix.len() { prefix[k] } else { last }, regs, out);
}
