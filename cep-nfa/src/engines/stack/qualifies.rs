//! Which programs the stack engine runs: sequences of single events under
//! skip-till-any-match whose conditions it can check while it builds a
//! match; anything else needs the run engine, and the error says why.

use crate::engines::error::EngineError;
use crate::program::{Program, Strategy};
use crate::syntax::ast::{Quant, Selection};

/// Why a program cannot run on the stack engine, or `Ok` when it can.
///
/// # Examples
/// ```
/// use cep_core::Schema;
/// use cep_nfa::compile::{compile, Options};
/// use cep_nfa::stack::qualifies;
/// let q = "PATTERN SEQ(A a, B b, D d) WHERE skip-till-any-match WITHIN 500";
/// let p = &compile(q, &mut Schema::new(), &Options::default()).unwrap().programs[0];
/// assert_eq!(qualifies(p), Ok(()));
/// // `EMIT` is evaluated on the stack engine's matches too.
/// let q = "PATTERN SEQ(A a, B b) WHERE skip-till-any-match AND b.x > a.x EMIT b.x - a.x AS rise, a.*";
/// let p = &compile(q, &mut Schema::new(), &Options::default()).unwrap().programs[0];
/// assert_eq!(qualifies(p), Ok(()));
/// let q = "PATTERN SEQ(A a, B+ b[], D d) WHERE skip-till-any-match";
/// let p = &compile(q, &mut Schema::new(), &Options::default()).unwrap().programs[0];
/// let err = qualifies(p).unwrap_err();
/// assert_eq!(err.to_string(), "element `b` is not a single event (`+`, `*` and `?` need the run engine)");
/// assert_eq!(err.variable(), Some("b"));
/// ```
pub fn qualifies<E>(prog: &Program<E>) -> Result<(), EngineError> {
    if prog.strategy != Strategy::AnyMatch {
        return Err(EngineError::strategy(prog.strategy.name()));
    }
    if let Some(e) = prog.elements.iter().find(|e| e.quant != Quant::One) {
        return Err(EngineError::not_single(&e.var));
    }
    if let Some(n) = prog.negations.first() {
        return Err(EngineError::negation(&n.var));
    }
    if let Some(t) = &prog.trailing {
        return Err(EngineError::trailing(&t.var));
    }
    if prog.select != Selection::All {
        return Err(EngineError::select());
    }
    if let Some(e) = prog.elements.iter().find(|e| !e.remote.is_empty()) {
        // A remote call waits on another service while a run goes on; the
        // stack engine builds matches from events already stacked.
        return Err(EngineError::remote(&e.var));
    }
    if prog.skip != crate::program::SkipTo::None {
        return Err(EngineError::skip());
    }
    if let Some(e) = prog.elements.iter().find(|e| e.within.is_some()) {
        return Err(EngineError::element_window(&e.var));
    }
    if prog.history_depth > 0 {
        return Err(EngineError::prev());
    }
    for e in &prog.elements {
        for c in e.conds.iter().filter(|c| !c.skip_first) {
            if c.own_regs {
                return Err(EngineError::own_regs(&c.text, &e.var));
            }
            if c.earliest.is_some() && c.frame_pred.is_none() {
                return Err(EngineError::later(&c.text, &e.var));
            }
        }
    }
    Ok(())
}
