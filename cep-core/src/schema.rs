//! Field layout and per-type schemas.
//!
//! A [`Schema`] gives every field name a dense [`FieldId`] (events store their
//! fields in a `Vec` indexed by it) and records, per event type, which fields
//! were seen with which kinds. Readers fill it; the query compiler reads it to
//! resolve names to slots and to report unknown types and fields.
//!
//! A schema is *complete* when it describes every event that will be read
//! (the reader saw the whole input, or a CSV file has no `type` column). What
//! the compiler reports as an error must not depend on how much of the input
//! was read ahead, so only names the input's *form* rules out are errors: a
//! field missing from a closed field set ([`Schema::fields_closed`]: a CSV
//! header fixes the columns) and a type missing from a closed type set
//! ([`Schema::types_closed`]: a CSV file without a `type` column holds only
//! `Event`). A type or field that merely was not seen, even in a complete
//! schema, is a warning: a type that does not occur and a missing field (NULL)
//! are valid in a query.

use ahash::AHashMap;

use crate::{Kind, Sym, Value};

/// Index of a field in an event's value vector.
pub type FieldId = u32;

/// A set of value kinds (a bitset over [`Kind`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KindSet(u8);

impl KindSet {
    fn bit(k: Kind) -> u8 {
        match k {
            Kind::Int => 1,
            Kind::Float => 2,
            Kind::Bool => 4,
            Kind::Str => 8,
        }
    }

    /// Adds a kind.
    pub fn insert(&mut self, k: Kind) {
        self.0 |= Self::bit(k);
    }

    /// Whether the kind is in the set.
    pub fn contains(self, k: Kind) -> bool {
        self.0 & Self::bit(k) != 0
    }

    /// Whether no non-null value was seen.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The union of two sets.
    pub fn union(self, other: KindSet) -> KindSet {
        KindSet(self.0 | other.0)
    }

    /// Whether every kind in the set is numeric (and the set is not empty).
    pub fn all_numeric(self) -> bool {
        !self.is_empty() && self.0 & !(1 | 2) == 0
    }

    /// Whether the set is exactly {string}.
    pub fn only_str(self) -> bool {
        self.0 == 8
    }

    /// Whether the set is exactly {bool}.
    pub fn only_bool(self) -> bool {
        self.0 == 4
    }

    /// Names of the kinds, for messages (`int or float`).
    pub fn describe(self) -> String {
        let names: Vec<&str> = [Kind::Int, Kind::Float, Kind::Bool, Kind::Str]
            .into_iter()
            .filter(|k| self.contains(*k))
            .map(Kind::name)
            .collect();
        if names.is_empty() { "nothing but NULL".to_owned() } else { names.join(" or ") }
    }
}

/// What was seen of one event type.
#[derive(Clone, Debug, Default)]
pub struct TypeInfo {
    /// Events of this type seen.
    pub count: u64,
    /// Kinds seen per field (indexed by [`FieldId`]; shorter when a field was
    /// registered after the type was last seen).
    pub kinds: Vec<KindSet>,
}

impl TypeInfo {
    /// Kinds seen for `field` (empty when never non-null).
    pub fn kinds_of(&self, field: FieldId) -> KindSet {
        self.kinds.get(field as usize).copied().unwrap_or_default()
    }
}

/// Field registry and per-type observations.
///
/// # Examples
/// ```
/// use cep_core::{Schema, Sym, Value};
/// let mut schema = Schema::new();
/// let price = schema.field("price");
/// schema.observe(Sym::new("Tick"), &[Value::Int(10)]);
/// schema.set_complete(true);
/// let tick = schema.type_info(Sym::new("Tick")).unwrap();
/// assert!(tick.kinds_of(price).contains(cep_core::Kind::Int));
/// ```
#[derive(Clone, Debug, Default)]
pub struct Schema {
    names: Vec<Sym>,
    ids: AHashMap<Sym, FieldId>,
    types: AHashMap<Sym, TypeInfo>,
    fields_closed: bool,
    types_closed: bool,
    complete: bool,
}

impl Schema {
    /// An empty, open schema.
    pub fn new() -> Schema {
        Schema::default()
    }

    /// The id of `name`, registering it when new.
    pub fn field(&mut self, name: &str) -> FieldId {
        let sym = Sym::new(name);
        if let Some(&id) = self.ids.get(&sym) {
            return id;
        }
        let id = self.names.len() as FieldId;
        self.names.push(sym);
        self.ids.insert(sym, id);
        id
    }

    /// The id of `name` if registered.
    pub fn lookup(&self, name: &str) -> Option<FieldId> {
        self.ids.get(&Sym::new(name)).copied()
    }

    /// The name of a field.
    pub fn field_name(&self, id: FieldId) -> &'static str {
        self.names[id as usize].as_str()
    }

    /// Number of registered fields (the length of an event's value vector).
    pub fn field_count(&self) -> usize {
        self.names.len()
    }

    /// All field names, in id order.
    pub fn field_names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.names.iter().map(|s| s.as_str())
    }

    /// Marks the field set as closed: no event can carry another field (a
    /// CSV header fixes the columns).
    pub fn close_fields(&mut self) {
        self.fields_closed = true;
    }

    /// Whether the field set is closed.
    pub fn fields_closed(&self) -> bool {
        self.fields_closed
    }

    /// Marks the type set as closed: no event can be of a type not seen or
    /// declared, whatever is read later (a CSV file without a `type` column
    /// holds only `Event`; its header alone says so).
    pub fn close_types(&mut self) {
        self.types_closed = true;
    }

    /// Whether the type set is closed (fixed by the input's form, not by
    /// having read all of it).
    pub fn types_closed(&self) -> bool {
        self.types_closed
    }

    /// Marks whether the type observations cover the whole input.
    pub fn set_complete(&mut self, complete: bool) {
        self.complete = complete;
    }

    /// Whether the type observations cover the whole input.
    pub fn is_complete(&self) -> bool {
        self.complete
    }

    /// Declares a type without observing an event (a CSV file without a
    /// `type` column has exactly one type, `Event`).
    pub fn declare_type(&mut self, ty: Sym) {
        self.types.entry(ty).or_default();
    }

    /// Records one event of type `ty` with these field values.
    pub fn observe(&mut self, ty: Sym, fields: &[Value]) {
        let info = self.types.entry(ty).or_default();
        info.count += 1;
        if info.kinds.len() < fields.len() {
            info.kinds.resize(fields.len(), KindSet::default());
        }
        for (slot, v) in info.kinds.iter_mut().zip(fields) {
            if let Some(k) = v.kind() {
                slot.insert(k);
            }
        }
    }

    /// Observations of a type, if it was seen or declared.
    pub fn type_info(&self, ty: Sym) -> Option<&TypeInfo> {
        self.types.get(&ty)
    }

    /// Names of all seen or declared types, sorted.
    pub fn type_names(&self) -> Vec<&'static str> {
        let mut v: Vec<&'static str> = self.types.keys().map(|s| s.as_str()).collect();
        v.sort_unstable();
        v
    }
}
