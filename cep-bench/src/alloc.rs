//! A counting global allocator: how many allocations (and bytes) a piece of
//! code makes, to check that an engine allocates nothing per event in its
//! steady state (issue 3, part 5).
//!
//! [`Counting`] forwards every call to [`std::alloc::System`] and counts it
//! in process-wide relaxed atomics. It counts only where a binary installs
//! it:
//!
//! ```
//! use cep_bench::alloc::{self, Counting};
//!
//! #[global_allocator]
//! static ALLOC: Counting = Counting;
//!
//! # fn main() {
//! let before = alloc::counts();
//! let v: Vec<u64> = Vec::with_capacity(100);
//! let used = alloc::counts().since(before);
//! assert_eq!(used.allocs, 1);
//! assert!(used.bytes >= 800);
//! assert!(alloc::installed());
//! # drop(v);
//! # }
//! ```
//!
//! The counters are shared by all threads: measure with one thread busy.
//! This is the crate's only `unsafe` code (implementing [`GlobalAlloc`] is
//! an `unsafe impl`); each block only forwards to `System` with the
//! arguments it was given.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

static ALLOCS: AtomicU64 = AtomicU64::new(0);
static REALLOCS: AtomicU64 = AtomicU64::new(0);
static DEALLOCS: AtomicU64 = AtomicU64::new(0);
static BYTES: AtomicU64 = AtomicU64::new(0);
static LIVE: AtomicU64 = AtomicU64::new(0);
static PEAK: AtomicU64 = AtomicU64::new(0);

/// `n` more bytes live: the peak follows.
#[inline]
fn grew(n: u64) {
    let now = LIVE.fetch_add(n, Relaxed) + n;
    PEAK.fetch_max(now, Relaxed);
}

/// The most bytes live at once since the last [`reset_peak`] (0 unless
/// [`Counting`] is the global allocator).
pub fn peak() -> u64 {
    PEAK.load(Relaxed)
}

/// Starts a new peak from the bytes live now.
pub fn reset_peak() {
    PEAK.store(LIVE.load(Relaxed), Relaxed);
}

/// The counting allocator: install it with `#[global_allocator]`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Counting;

// SAFETY: every method forwards to `System` with its own arguments, so the
// `GlobalAlloc` contract holds exactly as it does for `System`; the counters
// are atomics and do not allocate.
unsafe impl GlobalAlloc for Counting {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Relaxed);
        BYTES.fetch_add(layout.size() as u64, Relaxed);
        grew(layout.size() as u64);
        // SAFETY: forwards to `System`; the caller upholds `alloc`'s contract
        // (a layout of non-zero size).
        unsafe { System.alloc(layout) }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Relaxed);
        BYTES.fetch_add(layout.size() as u64, Relaxed);
        grew(layout.size() as u64);
        // SAFETY: forwards to `System`; the caller upholds `alloc_zeroed`'s
        // contract (a layout of non-zero size).
        unsafe { System.alloc_zeroed(layout) }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        DEALLOCS.fetch_add(1, Relaxed);
        LIVE.fetch_sub(layout.size() as u64, Relaxed);
        // SAFETY: forwards to `System`; the caller guarantees `ptr` came from
        // this allocator (hence from `System`) with this `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        REALLOCS.fetch_add(1, Relaxed);
        BYTES.fetch_add(new_size.saturating_sub(layout.size()) as u64, Relaxed);
        if new_size >= layout.size() {
            grew((new_size - layout.size()) as u64);
        } else {
            LIVE.fetch_sub((layout.size() - new_size) as u64, Relaxed);
        }
        // SAFETY: forwards to `System`; the caller guarantees `ptr` came from
        // this allocator (hence from `System`) with `layout`, and that
        // `new_size` is non-zero and does not overflow when rounded to the
        // alignment.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// A snapshot of the counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// `alloc` and `alloc_zeroed` calls.
    pub allocs: u64,
    /// `realloc` calls (a growing `Vec`).
    pub reallocs: u64,
    /// `dealloc` calls.
    pub deallocs: u64,
    /// Bytes requested: new blocks, plus the growth of reallocated ones.
    pub bytes: u64,
    /// Bytes allocated and not yet freed (a snapshot, not a difference:
    /// [`Counts::since`] keeps the later value).
    pub live: u64,
}

impl Counts {
    /// Allocations of either kind: `allocs + reallocs`.
    pub fn allocations(&self) -> u64 {
        self.allocs + self.reallocs
    }

    /// The counts since `earlier` (a snapshot taken before).
    pub fn since(&self, earlier: Counts) -> Counts {
        Counts {
            allocs: self.allocs.wrapping_sub(earlier.allocs),
            reallocs: self.reallocs.wrapping_sub(earlier.reallocs),
            deallocs: self.deallocs.wrapping_sub(earlier.deallocs),
            bytes: self.bytes.wrapping_sub(earlier.bytes),
            live: self.live,
        }
    }
}

/// The counters now (all zero unless [`Counting`] is the global allocator).
pub fn counts() -> Counts {
    Counts {
        allocs: ALLOCS.load(Relaxed),
        reallocs: REALLOCS.load(Relaxed),
        deallocs: DEALLOCS.load(Relaxed),
        bytes: BYTES.load(Relaxed),
        live: LIVE.load(Relaxed),
    }
}

/// Sets the counters to zero.
pub fn reset() {
    ALLOCS.store(0, Relaxed);
    REALLOCS.store(0, Relaxed);
    DEALLOCS.store(0, Relaxed);
    BYTES.store(0, Relaxed);
}

/// Whether [`Counting`] is the global allocator (it counts a test
/// allocation).
pub fn installed() -> bool {
    let before = ALLOCS.load(Relaxed);
    let b = std::hint::black_box(Box::new(0u64));
    drop(b);
    ALLOCS.load(Relaxed) != before
}
