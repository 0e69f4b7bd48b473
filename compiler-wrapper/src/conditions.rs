//! Conditions kept as branches of their own, so that each is an edge.
//!
//! At `-O1` and above LLVM's CFG simplification folds cheap conditions together: `a > 286 ||
//! b > 30` becomes one branch on the two comparisons or-ed, `x = c ? y : z` a select, a chain
//! of `&&` one test. SanitizerCoverage runs after that, so the conditions it folded have no
//! edge: an input that makes the second comparison true for the first time shows nothing new,
//! and a bug behind four folded conditions must be guessed whole. Source-based coverage, the
//! benchmark's yardstick and what users read, still counts each condition. Setting the folding
//! thresholds to zero keeps one branch per condition, at the price of a few branches where the
//! compiler would have computed both sides. One folding ignores the thresholds: loop
//! canonicalization (LoopSimplify) merges a loop's exit conditions into one branch without
//! weighing the cost, so `while (*p++ != 0 && p != end)` leaves the loop by one edge whichever
//! condition ended it. A pass plugin built with the wrapper (`unfold_conditions.cc`,
//! [`crate::plugin`]) runs just before SanitizerCoverage and splits every branch on an `||` or
//! `&&` of conditions back into one branch each. Clang itself emits a `?:` between plain values
//! as a select, and a `MIN()` becomes a min intrinsic, before any threshold applies: the plugin
//! turns those into branches too. `LABELFUZZ_FOLDED_CONDITIONS=1` keeps the
//! compiler's folding, for comparison.

use std::path::Path;

/// The LLVM options that stop the folding: no condition merged into its neighbour's branch
/// (`simplifycfg-branch-fold-threshold`, `bonus-inst-threshold`), no two-way `if` turned into a
/// select (the two phi-node folding thresholds).
pub const SPLIT_CONDITION_LLVM_OPTIONS: [&str; 4] = [
    "-simplifycfg-branch-fold-threshold=0",
    "-bonus-inst-threshold=0",
    "-phi-node-folding-threshold=0",
    "-two-entry-phi-node-folding-threshold=0",
];

/// The environment variable that keeps the compiler's folding.
pub const KEEP_FOLDING_VARIABLE: &str = "LABELFUZZ_FOLDED_CONDITIONS";

/// Whether conditions are split in this build (unless [`KEEP_FOLDING_VARIABLE`] is set).
#[must_use]
pub fn split_in_this_build() -> bool {
    !std::env::var(KEEP_FOLDING_VARIABLE).is_ok_and(|v| !v.is_empty() && v != "0")
}

/// The arguments for an invocation with `args` and `inputs`: the `-mllvm` folding thresholds
/// and the pass plugin that unfolds loop conditions ([`crate::plugin`]), only when it compiles
/// C or C++ (clang rejects `-mllvm` it never used under `-Werror`, as on a link of objects).
#[must_use]
pub fn clang_arguments(args: &[String], inputs: &[impl AsRef<Path>]) -> Vec<String> {
    if !compiles_source(args, inputs) {
        return Vec::new();
    }
    let mut arguments: Vec<String> = SPLIT_CONDITION_LLVM_OPTIONS
        .iter()
        .flat_map(|option| ["-mllvm".to_string(), (*option).to_string()])
        .collect();
    if let Some(plugin) = crate::plugin::unfold_conditions() {
        arguments.push(format!("-fpass-plugin={}", plugin.display()));
    }
    arguments
}

/// Whether the command line compiles a C-family source: an input with such an extension, or a
/// language named with `-x` (a source read from stdin, or with an unusual name).
fn compiles_source(args: &[String], inputs: &[impl AsRef<Path>]) -> bool {
    let named_language = args
        .windows(2)
        .any(|pair| pair[0] == "-x" && is_c_family_language(&pair[1]))
        || args
            .iter()
            .filter_map(|arg| arg.strip_prefix("-x"))
            .any(is_c_family_language);
    named_language
        || inputs.iter().any(|input| {
            let extension = input
                .as_ref()
                .extension()
                .and_then(|e| e.to_str())
                .unwrap_or("");
            matches!(
                extension,
                "c" | "cc"
                    | "cp"
                    | "cpp"
                    | "cxx"
                    | "c++"
                    | "C"
                    | "CC"
                    | "CPP"
                    | "m"
                    | "mm"
                    | "i"
                    | "ii"
            )
        })
}

fn is_c_family_language(language: &str) -> bool {
    matches!(
        language,
        "c" | "c++" | "objective-c" | "objective-c++" | "cpp-output" | "c++-cpp-output"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| (*s).to_string()).collect()
    }

    #[test]
    fn a_compile_of_a_c_or_cxx_source_gets_the_options_and_a_link_of_objects_does_not() {
        let none: [&str; 0] = [];
        let compile = clang_arguments(&strings(&["-c", "a.c", "-O2"]), &["a.c"]);
        assert_eq!(compile[..8].iter().filter(|a| *a == "-mllvm").count(), 4);
        assert_eq!(compile[0], "-mllvm");
        assert!(!clang_arguments(&strings(&["x.cpp"]), &["x.cpp"]).is_empty());
        assert!(clang_arguments(&strings(&["a.o", "b.a"]), &["a.o", "b.a"]).is_empty());
        assert!(clang_arguments(&strings(&["-c", "s.S"]), &["s.S"]).is_empty());
        assert!(clang_arguments(&strings(&["--version"]), &none).is_empty());
    }

    #[test]
    fn a_language_named_with_dash_x_is_a_compile() {
        let none: [&str; 0] = [];
        assert!(!clang_arguments(&strings(&["-x", "c", "-c", "-"]), &none).is_empty());
        assert!(!clang_arguments(&strings(&["-xc++", "-c", "odd.name"]), &["odd.name"]).is_empty());
        assert!(clang_arguments(&strings(&["-x", "assembler", "-c", "a"]), &["a"]).is_empty());
    }
}
