//! Grammar inputs for labelfuzz, without LibAFL (as Nautilus keeps its grammar engine apart
//! from its driver):
//!
//! - [`grammar`]: JSON grammars, costs, the depth-limited choice-sequence generator with its
//!   context-sensitive hooks, the Earley parser (sentences back to choices), the reducer (the
//!   core shrinker's passes on normalized choices);
//! - [`pattern`]: failure patterns (DDSET), which parts of a shrunk reproducer can be anything:
//!   over a derivation tree (`((<expr>))`), over bytes (`B ? \xff *`) and restated on a typed
//!   target's `Debug` form (`[Push(_), Add, ..]`);
//! - [`specialise`]: grammars specialised by patterns, `--avoid` (no input matches) and `--only`
//!   (every input does).

// The core's modules, under the names this crate's modules use for them.
pub(crate) use labelfuzz_core::{order, shrink};

pub mod grammar;
pub mod mine;
pub mod pattern;
pub mod specialise;
