#![doc = include_str!("../README.md")]

pub mod baseline;
pub mod levels;
pub mod suite;
pub mod typed;
pub mod w1;
pub mod w2;
pub mod w3;
pub mod w4;
// The one module with `unsafe` code: the counting `GlobalAlloc` (each block
// forwards to `System`). The crate denies `unsafe_code` everywhere else.
#[allow(unsafe_code)]
pub mod alloc;
