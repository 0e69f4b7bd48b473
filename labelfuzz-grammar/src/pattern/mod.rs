//! Abstract failure patterns: what about a crash reproducer matters.
//!
//! A minimal reproducer is one input that fails. Its pattern says which parts of it can be
//! anything: `((<expr>))` fails for every expression, `B ? \xff` for every middle byte. The idea
//! is DDSET's (Gopinath, Kampmann, Havrikov, Soremekun, Zeller, ISSTA 2020): regenerate one part
//! of the reproducer at random many times; when (nearly) every variant still shows the same
//! crash label, that part is abstract. It runs inside the fuzzer on every crash label, with a
//! bounded number of executions ([`Settings::budget`]).
//!
//! - [`grammar`]: grammar mode, over the derivation tree of the reproducer's choice sequence;
//! - [`bytes`]: byte mode, per byte and per run of bytes.

pub mod bytes;
pub mod grammar;
pub mod typed;

use serde::{Deserialize, Serialize};

pub use bytes::{generalize_bytes, ByteClass, BytePart, BytePattern};
pub use grammar::{generalize_grammar, GrammarPattern, Layer, PatternTree};
pub use typed::{generalize_typed, DebugForm, TypedPattern};

/// How much a generalization may cost and how sure it must be.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Settings {
    /// Random variants tried per part of the input.
    pub trials: u32,
    /// The share of variants that must still show the crash label for a part to be abstract.
    pub min_share: f64,
    /// The most executions one generalization may spend (after that, what is not yet
    /// generalized stays concrete).
    pub budget: usize,
}

impl Settings {
    /// The default: 20 variants a part, 90 % of them failing alike, at most 600 executions a
    /// crash label. Crash labels are few, so this costs a long run little throughput.
    pub const DEFAULT: Settings = Settings {
        trials: 20,
        min_share: 0.9,
        budget: 600,
    };

    /// Settings spending at most `budget` executions (0 turns generalization off).
    #[must_use]
    pub fn with_budget(budget: usize) -> Self {
        Settings {
            budget,
            ..Self::DEFAULT
        }
    }

    /// The most variants that may fail to show the label for a part to stay abstract.
    fn allowed_misses(&self) -> u32 {
        // Precision is irrelevant here: trials is small.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let misses = (f64::from(self.trials) * (1.0 - self.min_share)).floor() as u32;
        misses
    }
}

/// A crash reproducer's pattern. (Kept in LibAFL's state, which postcard serializes: no
/// internally tagged enums, no skipped fields.)
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Pattern {
    /// Over a grammar's derivation tree.
    Grammar(GrammarPattern),
    /// Over the reproducer's bytes.
    Bytes(BytePattern),
}

impl Pattern {
    /// How many executions finding it took.
    #[must_use]
    pub fn probes(&self) -> usize {
        match self {
            Pattern::Grammar(p) => p.probes,
            Pattern::Bytes(p) => p.probes,
        }
    }

    /// The pattern stated on a typed target's `Debug` form, when there is one.
    #[must_use]
    pub fn typed(&self) -> Option<&TypedPattern> {
        match self {
            Pattern::Bytes(p) => p.typed.as_ref(),
            Pattern::Grammar(_) => None,
        }
    }
}

impl std::fmt::Display for Pattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Pattern::Grammar(p) => p.fmt(f),
            Pattern::Bytes(p) => p.fmt(f),
        }
    }
}

/// How a part of the input came out of its variants.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Trial {
    /// (Nearly) every variant still showed the crash label: `shown` of `tried`.
    Abstract {
        /// Variants that showed the label.
        shown: u32,
        /// Variants run.
        tried: u32,
    },
    /// Too many variants lost it (or there were too few to tell).
    Concrete,
    /// The budget or the run ended first.
    Stopped,
}

/// A budgeted oracle: runs the crash test, counting executions.
struct Oracle<'t> {
    test: &'t mut dyn FnMut(&[u8]) -> crate::shrink::Verdict,
    spent: usize,
    budget: usize,
    stopped: bool,
}

impl Oracle<'_> {
    /// Whether `input` still shows the crash label; `None` once the budget or run is over.
    fn shows(&mut self, input: &[u8]) -> Option<bool> {
        if self.stopped || self.spent >= self.budget {
            self.stopped = true;
            return None;
        }
        self.spent += 1;
        match (self.test)(input) {
            crate::shrink::Verdict::Accepted => Some(true),
            crate::shrink::Verdict::Rejected => Some(false),
            crate::shrink::Verdict::Stop => {
                self.stopped = true;
                None
            }
        }
    }

    /// Tries variants from `variant(i)` (i = 0, 1, ...; `None`: no new variant for this i)
    /// until the part is decided: abstract after `settings.trials` variants with at most the
    /// allowed misses, concrete at the first miss too many.
    fn trial(
        &mut self,
        settings: &Settings,
        variant: &mut dyn FnMut(u64) -> Option<Vec<u8>>,
    ) -> Trial {
        let (mut shown, mut missed) = (0, 0);
        let allowed = settings.allowed_misses();
        // Variants equal to the reproducer say nothing: a few more attempts make up for them.
        let attempts = u64::from(settings.trials) * 4;
        for i in 0..attempts {
            if shown + missed >= settings.trials {
                break;
            }
            let Some(input) = variant(i) else { continue };
            match self.shows(&input) {
                None => return Trial::Stopped,
                Some(true) => shown += 1,
                Some(false) => {
                    missed += 1;
                    if missed > allowed {
                        return Trial::Concrete;
                    }
                }
            }
        }
        // A part with (almost) no variants at all (a single-choice rule) is left concrete.
        let tried = shown + missed;
        if tried * 2 >= settings.trials && missed <= allowed {
            Trial::Abstract { shown, tried }
        } else {
            Trial::Concrete
        }
    }
}

/// A 64-bit mix of a few numbers: each variant's own random seed, the same in every run (a
/// restarted process replays the same variants).
fn mix(parts: &[u64]) -> u64 {
    let mut h = 0x243f_6a88_85a3_08d3_u64;
    for &p in parts {
        h ^= p;
        h = h.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        h ^= h >> 29;
    }
    h
}
