//! # labelfuzz-runtime
//!
//! What a fuzzing process needs underneath the labelfuzz engine, the part that plays the role
//! `libafl_targets` plays for LibAFL: nothing here knows LibAFL's fuzzer, state or corpus.
//!
//! - [`signals`]: the chained crash handler that records a signal's or sanitizer report's site
//!   (the target's frames only), the guard in front of the timeout handler (no save inside the
//!   allocator or the unwinder; no hang blamed on a machine that kept the process waiting).
//! - [`symbols`]: function names from the executable's symbol table, for crash sites.
//! - [`embedded_dictionary`]: the tokens `labelfuzz-cc` stored in the executable, from the
//!   string literals of the code under test.
//! - [`memory`]: the RSS watcher behind `--rss-limit-mb`.
//! - [`interference`]: what the target does to its process (signal handlers, standard
//!   descriptors, resource limits, crashing children), put back and reported once.
//! - [`cmp_progress`], [`reject`]: comparison progress per site (from `sancov_cmp.c`) and the
//!   harness's "reject this input"; [`gate_watch`]: a few sites' operands through one
//!   execution, for repairing checksums.
//! - [`console`]: the fuzzer's own messages, apart from the target's output, writable from
//!   signal handlers; [`process`]: other processes as `/proc` shows them, shared pages.
//! - C: `cmp_interceptors.c` (`memcmp`, `strcmp`… interposed for CmpLog), `sancov_cmp.c`
//!   (SanitizerCoverage's comparison callbacks), `mine_trace.c` (the mining build's recorder).

// The C parts write LibAFL's comparison maps and call its CmpLog functions: linked always.
use libafl_targets as _;
// The paths the modules use for the core's labels.
pub(crate) use labelfuzz_core::labels;

pub mod cmp_progress;
pub mod console;
pub mod embedded_dictionary;
pub mod gate_watch;
pub mod interference;
pub mod memory;
pub mod process;
pub mod reject;
pub mod signals;
pub mod symbols;
