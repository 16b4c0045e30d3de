//! Remote predicates for `cep` (LANGUAGE.md §8): resolvers that answer the
//! engines' [`Call`](cep_core::remote::Call)s.
//!
//! - [`HttpResolver`] asks HTTP/1.1 services, one URL per function, with
//!   batching, coalescing of identical calls, an answer cache, a bound on
//!   calls in flight (the shard's backpressure), timeouts and retries. It
//!   runs a current-thread tokio runtime on a thread of its own; the shard
//!   talks to it over channels and never touches a socket.
//! - [`DelayResolver`] answers an in-process function after simulated
//!   communication and evaluation delays, repeatably given a seed: the W7
//!   experiment's service and the property tests' one.
//!
//! Both implement [`cep_core::remote::Resolver`] and keep its contract:
//! every call answered exactly once, `submit` waits only at the bound,
//! answers depend on function and arguments only.
//!
//! # Examples
//! ```
//! use std::time::Duration;
//! use cep_core::remote::{Answer, Call, CallId, Resolver};
//! use cep_core::Value;
//! use cep_remote::{DelayConfig, DelayResolver};
//!
//! // A service 0.5 ms away that is true for even vessel ids; replies may
//! // come back in any order.
//! let config = DelayConfig::default()
//!     .with_comm(Duration::from_micros(500), Duration::from_micros(100))
//!     .with_batching(8, Duration::from_micros(200))
//!     .with_reorder(42);
//! let mut near = DelayResolver::new(config, |_func: u16, args: &[Value]| {
//!     matches!(args[0], Value::Int(mmsi) if mmsi % 2 == 0)
//! });
//! for i in 0..10 {
//!     near.submit(Call { id: CallId(i), func: 0, args: vec![Value::Int(i as i64)] });
//! }
//! let mut answers = Vec::new();
//! while near.in_flight() > 0 {
//!     near.wait(&mut answers, Duration::from_secs(1));
//! }
//! answers.sort_by_key(|(id, _)| *id);
//! assert_eq!(answers.len(), 10);
//! assert_eq!(answers[4], (CallId(4), Answer::Value(true)));
//! assert!(near.stats().batches < 10);
//! ```
//!
//! Over HTTP (needs a service listening):
//! ```no_run
//! use std::time::Duration;
//! use cep_core::remote::{Call, CallId, Resolver};
//! use cep_core::Value;
//! use cep_remote::{Endpoint, HttpResolver, RemoteConfig};
//!
//! let config = RemoteConfig::new(vec![Endpoint::new("near", "http://127.0.0.1:7070/near")])
//!     .with_timeout(Duration::from_secs(2))
//!     .with_batching(64, Duration::from_millis(1));
//! let mut near = HttpResolver::new(&config)?;
//! let args = vec![Value::Int(235000001), Value::Float(48.38), Value::Float(-4.49), Value::Int(1000)];
//! near.submit(Call { id: CallId(17), func: 0, args });
//! let mut answers = Vec::new();
//! near.wait(&mut answers, Duration::from_secs(10));
//! # Ok::<(), cep_remote::RemoteError>(())
//! ```

mod cache;
mod client;
mod config;
mod delay;
mod ledger;
mod resolver;
mod wire;

pub use config::{Endpoint, RemoteConfig, RemoteError};
pub use delay::{DelayConfig, DelayResolver};
pub use resolver::HttpResolver;
