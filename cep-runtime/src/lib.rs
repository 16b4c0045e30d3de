#![doc = include_str!("../README.md")]
//!
//! ## Modules
//!
//! Each module below uses only the ones listed before it (and the crates
//! beneath this one):
//!
//! - [`sink`]: where output goes: [`Sink`], [`QueryInfo`], [`JsonLines`].
//! - [`error`]: [`PushError`], [`RunnerError`], [`RestoreError`].
//! - [`event`]: events built by field name, [`EventBuilder`], [`EventError`].
//! - [`runner`]: one thread's [`Runner`] and its counts; uses `sink`, `error`,
//!   the engines (cep-nfa), the reorder buffer (cep-time) and level alerts
//!   (cep-index).
//! - `order`: the ordered merge of several runners' lines; uses `sink`.
//! - [`checkpoint`]: the checkpoint file; uses `runner` (its snapshot).
//! - [`shard`]: the runtime on several threads, by key; uses `runner`,
//!   `order`, `checkpoint`.
//! - [`job`]: assembles and runs every pipeline from a spec; uses all of
//!   the above and cep-io's sources and outputs.
//! - [`record`]: output lines read back as values ([`Record`]), and
//!   [`RecordStream`], an async stream of them; uses nothing above.
//! - [`runtime`]: a job its caller pushes events to; uses `job`, `record`.
//!
//! The types most callers need are re-exported here: [`Runtime`] and its
//! builder and [`Output`], [`Job`] and [`JobSpec`], [`Record`].

pub mod checkpoint;
pub mod error;
pub mod event;
pub mod job;
mod order;
pub mod record;
pub mod runner;
pub mod runtime;
pub mod shard;
pub mod sink;

pub use error::{PushError, RestoreError, RunnerError};
pub use event::{EventBuilder, EventError};
pub use job::{Job, JobError, JobSpec};
pub use record::{AlertRecord, MatchRecord, Record, RecordStream, StreamSender};
pub use runner::{LEVEL_KEY_FIELD, LEVELS_BIT, MASK_QUERIES, Runner, RunnerSnapshot, RunnerStats, Summary};
pub use runtime::{Output, Runtime, RuntimeBuilder};
pub use sink::{JsonLines, QueryInfo, Sink};

pub(crate) use runner::{partition_field, query_info};
pub(crate) use sink::{fire_line, match_line};
