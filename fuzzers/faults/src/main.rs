//! Faults that are not panics. Each must become its own crash label with a minimal reproducer,
//! and the run must go on after each:
//! - `A!`: `std::process::abort()` → SIGABRT;
//! - `N!`: a write through a null pointer → SIGSEGV at one site;
//! - `S!`: unbounded recursion → stack overflow, SIGSEGV at another site;
//! - `R!`: unbounded mutual recursion (`ping` calls `pong` calls `ping`) → a stack overflow
//!   labelled by both functions;
//! - `L!`: an endless loop → timeout;
//! - `X!`: `std::process::exit(0)` in the middle of an execution → an `exit` crash;
//! - `M!`: memory grows without bound (up to 4 GiB) → an `oom` crash under `--rss-limit-mb`;
//! - `I!`: a range past the end of a vector to drain, a panic raised inside `core` → labelled by the line of
//!   this crate that sliced, not by `core`'s;
//! - `J!`: the same range check failing in another function of this crate → a label of its own,
//!   naming that function.

#![no_main]

use std::hint::black_box;

/// True when `data` starts with `tag` followed by `!`, compared one byte at a time so that
/// coverage sees each step.
fn tagged(data: &[u8], tag: u8) -> bool {
    black_box(data.first()) == Some(&tag) && black_box(data.get(1)) == Some(&b'!')
}

#[inline(never)]
fn null_write() {
    let null: *mut u8 = black_box(std::ptr::null_mut());
    // SAFETY: none — this is the planted bug.
    unsafe { null.write_volatile(1) };
}

#[inline(never)]
fn recurse(depth: u64) -> u64 {
    let frame = [depth as u8; 512];
    if black_box(depth) == u64::MAX {
        return 0;
    }
    black_box(&frame);
    1 + recurse(black_box(depth + 1))
}

#[inline(never)]
fn ping(depth: u64) -> u64 {
    let frame = [depth as u8; 256];
    black_box(&frame);
    1 + pong(black_box(depth + 1))
}

#[inline(never)]
fn pong(depth: u64) -> u64 {
    let frame = [depth as u8; 256];
    if black_box(depth) == u64::MAX {
        return 0;
    }
    black_box(&frame);
    1 + ping(black_box(depth + 1))
}

#[inline(never)]
fn hoard_memory() -> usize {
    let mut blocks = Vec::new();
    for _ in 0..64 {
        // Filled with ones, so every page is touched and resident.
        blocks.push(vec![1u8; 64 << 20]);
        black_box(&blocks);
    }
    blocks.len()
}

#[inline(never)]
fn drain_past_end(data: &[u8]) -> usize {
    // Indexing reports the caller's line itself (`#[track_caller]`); `drain`'s range check
    // reports `core`'s.
    let mut bytes = data.to_vec();
    bytes.drain(data.len() + black_box(2)..).count()
}

#[inline(never)]
fn drain_beyond_end(data: &[u8]) -> usize {
    let mut bytes = data.to_vec();
    bytes.drain(..data.len() + black_box(3)).count()
}

#[inline(never)]
fn hang() {
    loop {
        black_box(());
    }
}

labelfuzz::fuzz_target!(|data: &[u8]| {
    if tagged(data, b'A') {
        std::process::abort();
    }
    if tagged(data, b'N') {
        null_write();
    }
    if tagged(data, b'S') {
        black_box(recurse(0));
    }
    if tagged(data, b'R') {
        black_box(ping(0));
    }
    if tagged(data, b'L') {
        hang();
    }
    if tagged(data, b'M') {
        black_box(hoard_memory());
    }
    if tagged(data, b'X') {
        std::process::exit(0);
    }
    if tagged(data, b'I') {
        black_box(drain_past_end(data));
    }
    if tagged(data, b'J') {
        black_box(drain_beyond_end(data));
    }
});
