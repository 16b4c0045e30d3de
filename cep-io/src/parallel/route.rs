//! How the parser threads split a block's events into parts.

use std::sync::Arc;

use cep_core::keys::shard_cached;
use cep_core::{Event, FieldId, Value};

/// How the parser threads split each block's events into parts — for a
/// sharded runtime, one part per shard — so that a caller can hand a whole
/// block on, each part to its own consumer, without touching its events
/// ([`ParallelReader::take_block`](super::ParallelReader::take_block)).
///
/// # Examples
/// ```
/// use cep_core::keys::shard_of;
/// use cep_io::parallel::Partition;
/// use cep_core::{Event, Sym, Value};
/// // By the key in field 0, as a sharded runtime routes it.
/// let by_key = Partition::by_field(2, 0);
/// let e = Event::new(Sym::new("Tick"), 0, 0, vec![Value::Int(7)]);
/// assert_eq!(by_key.part_of(&e), shard_of(&Value::Int(7), 2));
/// // By any rule.
/// let odd = Partition::new(2, |e: &Event| e.ts as usize % 2);
/// assert_eq!(odd.part_of(&Event::new(Sym::new("Tick"), 3, 0, vec![])), 1);
/// ```
#[derive(Clone)]
pub struct Partition {
    pub(super) parts: usize,
    pub(super) rule: Rule,
}

/// What a [`Partition`] splits by.
#[derive(Clone)]
pub(super) enum Rule {
    /// [`shard_cached`] of a field (NULL when an event has no such field),
    /// computed in the parse loop: through a closure it was a call the
    /// compiler could not inline, 28 instructions an event on W5.
    Field(FieldId),
    Custom(Arc<dyn Fn(&Event) -> usize + Send + Sync>),
}

impl Partition {
    /// `parts` parts (at least one); `part_of` gives an event's part (a
    /// value of `parts` or more counts as the last part).
    pub fn new(parts: usize, part_of: impl Fn(&Event) -> usize + Send + Sync + 'static) -> Partition {
        Partition { parts: parts.max(1), rule: Rule::Custom(Arc::new(part_of)) }
    }

    /// `parts` parts (at least one) by the value of field `field`: an
    /// event goes to part [`shard_of`](cep_core::keys::shard_of) its value
    /// among `parts` (of NULL when it has no such field), which is where a
    /// sharded runtime with `parts` shards routes it.
    pub fn by_field(parts: usize, field: FieldId) -> Partition {
        Partition { parts: parts.max(1), rule: Rule::Field(field) }
    }

    /// The number of parts.
    pub fn parts(&self) -> usize {
        self.parts
    }

    /// The part of `e`, below [`parts`](Self::parts).
    #[inline(always)]
    pub fn part_of(&self, e: &Event) -> usize {
        let part = match &self.rule {
            Rule::Field(f) => shard_cached(e.fields.get(*f as usize).unwrap_or(&Value::Null), self.parts),
            Rule::Custom(part_of) => part_of(e),
        };
        part.min(self.parts - 1)
    }
}

impl std::fmt::Debug for Partition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Partition").field("parts", &self.parts).finish_non_exhaustive()
    }
}
