#![doc = include_str!("../README.md")]

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
