//! The routing contract: how the parser threads split each block's events
//! into parts. The reader does not know the rule — for a sharded runtime it
//! is the runtime's key hash, whose version its checkpoints record — so the
//! rule's owner implements [`Route`] and the reader only calls it.

use cep_core::{FieldId, Value};

/// How the parser threads split each block's events into parts — for a
/// sharded runtime, one part per shard (`cep_runtime::shard::KeyRoute`) —
/// so that a caller can hand a whole block on, each part to its own
/// consumer, without touching its events
/// ([`ParallelReader::take_block`](super::ParallelReader::take_block)). An
/// event goes by the value of one [field](Route::field), NULL when it has
/// no such field.
///
/// [`part_of`](Route::part_of) is called once per event, in the parse
/// loop: the parser is generic over the route, so the call is statically
/// dispatched and can be inlined (the route's type is erased once per
/// block, where a parse job is queued). `&self`, not `&mut self`: one
/// route serves every parser thread at once.
///
/// # Examples
/// ```
/// use cep_core::{FieldId, Value};
/// use cep_io::parallel::Route;
/// // Odd integer keys in field 0 to part 1, everything else to part 0.
/// struct Odd;
/// impl Route for Odd {
///     fn parts(&self) -> usize {
///         2
///     }
///     fn field(&self) -> FieldId {
///         0
///     }
///     fn part_of(&self, key: &Value) -> usize {
///         matches!(key, Value::Int(k) if k % 2 == 1) as usize
///     }
/// }
/// assert_eq!(Odd.part_of(&Value::Int(7)), 1);
/// assert_eq!(Odd.part_of(&Value::Null), 0);
/// ```
pub trait Route: Send + Sync + 'static {
    /// The number of parts (0 counts as one).
    fn parts(&self) -> usize;

    /// The field whose value routes an event.
    fn field(&self) -> FieldId;

    /// The part of an event whose [field](Route::field) holds `key` (NULL
    /// when the event has no such field), below [`parts`](Route::parts); a
    /// value of `parts` or more counts as the last part.
    fn part_of(&self, key: &Value) -> usize;
}

/// The route of a reader opened without one: no value, so a parser over it
/// never splits (it stands for the type the parser is generic over).
pub(super) enum NoRoute {}

impl Route for NoRoute {
    fn parts(&self) -> usize {
        match *self {}
    }

    fn field(&self) -> FieldId {
        match *self {}
    }

    fn part_of(&self, _: &Value) -> usize {
        match *self {}
    }
}
