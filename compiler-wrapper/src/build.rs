//! What each kind of build compiles with: the fuzzing build's instrumentation (with its
//! conditions kept apart, [`crate::conditions`]), the coverage build's, the mining build's.

use std::env;

use crate::conditions;
use crate::Invocation;

/// What every compilation gets: edge coverage and comparison operands (for the engine's CmpLog
/// stage), debug info for crash sites, and the macro fuzzing builds define (OSS-Fuzz's flags
/// and AFL++'s compilers do; LibAFL's wrapper adds the last two itself).
const INSTRUMENT_FLAGS: [&str; 3] = [
    "-fsanitize-coverage=trace-pc-guard,trace-cmp",
    "-g",
    "-DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION=1",
];

/// What every compilation gets instead in a coverage build (`LABELFUZZ_COVERAGE=1`): clang's
/// source-based coverage, which `FUZZER coverage OUT` replays a run's inputs through.
const COVERAGE_FLAGS: [&str; 2] = ["-fprofile-instr-generate", "-fcoverage-mapping"];

/// What a mining build (`LABELFUZZ_MINE=1`) compiles with instead: a callback on every
/// function's entry and on every load (the runtime's `FUZZER mine` sees which function read each
/// input byte, nested), with functions kept whole (no inlining, no tail calls) and frame pointers
/// (the runtime tells invocations apart by their frame address, as nothing marks a return).
const MINE_FLAGS: [&str; 8] = [
    "-fsanitize-coverage=func,trace-pc,trace-loads",
    "-g",
    "-DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION=1",
    "-O1",
    "-fno-inline",
    "-fno-optimize-sibling-calls",
    "-fno-omit-frame-pointer",
    "-mno-omit-leaf-frame-pointer",
];

/// Which instrumentation a build asks for, from the environment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Build {
    /// Edges and comparisons, for fuzzing (the default).
    Fuzz,
    /// Source-based coverage (`LABELFUZZ_COVERAGE=1`).
    Coverage,
    /// Function entries and loads, for mining a grammar (`LABELFUZZ_MINE=1`).
    Mine,
}

impl Build {
    pub(crate) fn from_env() -> Build {
        let set = |name: &str| env::var(name).is_ok_and(|v| !v.is_empty() && v != "0");
        if set("LABELFUZZ_MINE") {
            Build::Mine
        } else if set("LABELFUZZ_COVERAGE") {
            Build::Coverage
        } else {
            Build::Fuzz
        }
    }

    /// The flags every compilation gets (`with_extras`: also debug info and the fuzzing macro,
    /// which LibAFL's wrapper adds itself on the paths that go through it).
    pub(crate) fn flags(self, with_extras: bool) -> Vec<&'static str> {
        let mut flags: Vec<&str> = match self {
            Build::Fuzz => INSTRUMENT_FLAGS.to_vec(),
            Build::Coverage => {
                let mut flags = COVERAGE_FLAGS.to_vec();
                flags.extend(&INSTRUMENT_FLAGS[1..]);
                flags
            }
            Build::Mine => MINE_FLAGS.to_vec(),
        };
        if !with_extras {
            flags.retain(|flag| *flag != "-g" && !flag.starts_with("-DFUZZING_BUILD_MODE"));
        }
        if self != Build::Coverage {
            flags.extend(KEEP_COMPARE_CALLS);
        }
        flags
    }
}

/// Comparison routines clang must leave as calls (as `-fsanitize=fuzzer` does): a `memcmp`
/// against a constant would otherwise be inlined, and the labelfuzz interceptors, which hand
/// both operands to the CmpLog stage, would never see it.
const KEEP_COMPARE_CALLS: [&str; 8] = [
    "-fno-builtin-memcmp",
    "-fno-builtin-bcmp",
    "-fno-builtin-strcmp",
    "-fno-builtin-strncmp",
    "-fno-builtin-strcasecmp",
    "-fno-builtin-strncasecmp",
    "-fno-builtin-strstr",
    "-fno-builtin-memmem",
];

impl Build {
    /// What keeps each condition its own branch (the `-mllvm` folding thresholds and the pass
    /// plugin, [`conditions::clang_arguments`]): fuzzing builds of C and C++ sources only,
    /// unless `LABELFUZZ_FOLDED_CONDITIONS=1`.
    pub(crate) fn condition_flags(self, invocation: &Invocation) -> Vec<String> {
        if self == Build::Fuzz && conditions::split_in_this_build() {
            conditions::clang_arguments(&invocation.args, &invocation.inputs)
        } else {
            Vec::new()
        }
    }
}
