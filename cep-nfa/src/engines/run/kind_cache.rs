//! Type tests once per kind of event: when the program's type tests depend
//! on the type only, their answers (which elements and negations accept
//! it) are cached per kind in a small direct-mapped table, so most events
//! run none.

use crate::engines::api::StreamEvent;

use super::Engine;

/// Places in an engine's cache of type-test answers. An event's kind is
/// its type's symbol number, which can be large (symbols are numbered
/// across all the strings a process interned): a cache indexed by it grew
/// to 24 bytes times the largest, in every engine. Direct-mapped, it is a
/// fixed 384 bytes, and streams of up to 16 types (of numbers distinct
/// modulo 16) run every type test once per type.
pub(super) const KIND_WAYS: usize = 16;

/// The type tests' answers for one kind of event.
#[derive(Clone, Copy, Debug)]
pub(super) struct KindAnswer {
    /// `u32::MAX`: no answer held.
    pub(super) kind: u32,
    /// Whether the trailing negation accepts it.
    pub(super) trail: bool,
    /// Bit j: element j accepts it.
    pub(super) acc: u64,
    /// Bit g: negation g accepts it.
    pub(super) neg: u64,
}

pub(super) const NO_ANSWER: KindAnswer = KindAnswer { kind: u32::MAX, trail: false, acc: 0, neg: 0 };

impl<E: StreamEvent> Engine<E> {
    /// Runs the type tests for `e` into `acc` / `neg_acc`; returns whether
    /// anything accepts it and whether the trailing negation does.
    #[inline(always)]
    pub(super) fn accept(&mut self, e: &E) -> (bool, bool) {
        // (Kind `u32::MAX` marks an empty place, so it is not cached.)
        let kind = if self.prog.accepts_by_kind { e.kind().filter(|&k| k != NO_ANSWER.kind) } else { None };
        if let Some(k) = kind
            && let answer = self.kind_cache[k as usize % KIND_WAYS]
            && answer.kind == k
        {
            let (acc, neg, trail) = (answer.acc, answer.neg, answer.trail);
            self.acc = acc;
            self.neg_acc = neg;
            return (acc != 0 || neg != 0 || trail, trail);
        }
        self.run_type_tests(e, kind)
    }

    /// [`accept`](Self::accept) without a cached answer: runs the tests
    /// (and caches the answer for the kind).
    #[inline(never)]
    pub(super) fn run_type_tests(&mut self, e: &E, kind: Option<u32>) -> (bool, bool) {
        let prog = &self.prog;
        let mut acc = 0u64;
        for (j, el) in prog.elements.iter().enumerate() {
            acc |= u64::from((el.accepts)(e)) << j;
        }
        let mut neg = 0u64;
        for (g, n) in prog.negations.iter().enumerate() {
            neg |= u64::from((n.accepts)(e)) << g;
        }
        let trail = prog.trailing.as_ref().is_some_and(|t| (t.accepts)(e));
        if let Some(kind) = kind {
            self.kind_cache[kind as usize % KIND_WAYS] = KindAnswer { kind, trail, acc, neg };
        }
        self.acc = acc;
        self.neg_acc = neg;
        (acc != 0 || neg != 0 || trail, trail)
    }
}
