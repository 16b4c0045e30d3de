#![doc = include_str!("../README.md")]

pub mod alert;
mod bits;
pub mod file;
pub mod index;
mod order;
pub mod scan;
mod series;

pub use alert::{Alert, AlertError, AlertState, Direction, Fire, Trigger, step};
pub use index::{FieldRef, LevelIndex, LevelSnapshot, RestoreError};
pub use order::order_key;
pub use scan::ScanIndex;
