//! Where a timer goes on the wheel: timestamps mapped onto order-preserving
//! `u64` keys, and a key's level and slot. Apart so that the arithmetic the
//! whole wheel rests on can be read, and tested, on its own.

use cep_core::Timestamp;

/// Bits per level: 64 slots.
pub(super) const BITS: u32 = 6;
/// Slots per level.
pub(super) const SLOTS: usize = 1 << BITS;
/// Levels: 11 × 6 bits ≥ 64 bits, so every key has a level.
pub(super) const LEVELS: usize = 11;

/// Maps a timestamp onto an order-preserving `u64` key (`i64::MIN` → 0).
#[inline]
pub(super) fn to_key(ts: Timestamp) -> u64 {
    (ts as u64) ^ (1 << 63)
}

/// The inverse of [`to_key`].
#[inline]
pub(super) fn from_key(key: u64) -> Timestamp {
    (key ^ (1 << 63)) as i64
}

/// The level a timer with `key ≥ elapsed` belongs on: the 6-bit group of its
/// highest bit that differs from `elapsed` (level 0 when they differ only in
/// the low 6 bits).
#[inline]
pub(super) fn level_for(elapsed: u64, key: u64) -> usize {
    let masked = (elapsed ^ key) | (SLOTS as u64 - 1);
    let significant = 63 - masked.leading_zeros();
    (significant / BITS) as usize
}

/// The slot of `key` on `level`.
#[inline]
pub(super) fn slot_for(key: u64, level: usize) -> usize {
    ((key >> (BITS as usize * level)) & (SLOTS as u64 - 1)) as usize
}

/// The first key covered by `slot` on `level`, given the current `elapsed`:
/// `elapsed`'s bits above the level, the slot's bits, zeros below.
#[inline]
pub(super) fn slot_start(elapsed: u64, level: usize, slot: usize) -> u64 {
    let shift = BITS as usize * (level + 1);
    let high = if shift >= 64 { 0 } else { elapsed & !((1u64 << shift) - 1) };
    high | ((slot as u64) << (BITS as usize * level))
}
