#![doc = include_str!("../README.md")]

pub mod budget;
pub mod cell;
pub mod emit;
pub mod event;
pub mod json;
pub mod keys;
pub mod matches;
pub mod remote;
pub mod schema;
pub mod time;
pub mod value;

pub use emit::{EmitValue, EventObject};
pub use event::{DEFAULT_TYPE, Event, FlatCursor, FlatEvents};
pub use matches::{Match, MatchId, cmp_rows_by_var, match_id};
pub use schema::{FieldId, KindSet, Schema, TypeInfo};
pub use time::{TimeUnit, Timestamp};
pub use value::{Kind, Sym, Value};
