//! Ablation (`BENCH_ABLATION=cmp-progress,cmp-progress-from-start,cmplog,cmplog-transforms,
//! cmplog-colorize,cmplog-repair,havoc,regular-runs,long-runs,long-runs-from-start,
//! rare-schedule,charge-exec-time,shrink-budget,auto-dict,split-conditions`): labelfuzz with one
//! lever flipped from its default against labelfuzz as it ships, same targets, seeds and
//! yardstick, so that each default is chosen by measurement. The flipped runs are fuzzers of
//! their own ([`Fuzzer::LabelfuzzFlipped`]), with their own run directories and records
//! (`bench/results/<secs>s/<processor>/<target>/labelfuzz-no-<lever>/` for a lever on by default,
//! `labelfuzz-with-<lever>/` for one off by default); the default runs are the standard
//! benchmark's labelfuzz runs, reused when their sources are current.

use std::fmt::Write as _;

use crate::fuzzers::Fuzzer;
use crate::report::{self, Measured};
use crate::targets::Target;

/// A part of labelfuzz that a flag turns on or off.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Lever {
    /// Comparison progress labels, on once the run's edges stall (`--cmp-progress 0`).
    CmpProgress,
    /// Comparison progress labels from the first execution rather than from the stall (off
    /// by default; `--cmp-progress 1`).
    CmpProgressFromStart,
    /// The input-to-state stage (`--cmplog 0`).
    Cmplog,
    /// Input-to-state through arithmetic transforms of input values (`--cmplog-transforms 0`).
    CmplogTransforms,
    /// Input-to-state on colorized entries (off by default; `--cmplog-colorize 1`).
    CmplogColorize,
    /// Checksum and length repair of gated entries' mutants (`--cmplog-repair 0`).
    CmplogRepair,
    /// Havoc mutants after the expansions (`--havoc 0`).
    Havoc,
    /// Repeated-byte runs and the doubled input among the expansions (off by default;
    /// `--regular-runs 1`).
    RegularRuns,
    /// Havoc's runs of 17 to 4096 repeated bytes, on once the run's edges stall
    /// (`--long-runs 0`).
    LongRuns,
    /// Havoc's long runs from the first execution rather than from the stall (off by default;
    /// `--long-runs 1`).
    LongRunsFromStart,
    /// Labels picked by rarity and payoff instead of uniformly (off by default;
    /// `--schedule rare`).
    RareSchedule,
    /// Slow entries picked in proportion to their speed (`--charge-exec-time 0`).
    ChargeExecTime,
    /// Coverage shrinks of slow executions that end at a deadline (`--shrink-budget 0`).
    ShrinkBudget,
    /// The tokens of the program's string literals that `labelfuzz-cc` embeds (`--auto-dict 0`).
    AutoDict,
    /// Each condition a branch of its own in the fuzzing build (a build of its own with
    /// `LABELFUZZ_FOLDED_CONDITIONS=1`, no flag).
    SplitConditions,
}

impl Lever {
    /// Every lever, in the order of the table's columns.
    pub const ALL: [Lever; 15] = [
        Lever::CmpProgress,
        Lever::CmpProgressFromStart,
        Lever::Cmplog,
        Lever::CmplogTransforms,
        Lever::CmplogColorize,
        Lever::CmplogRepair,
        Lever::Havoc,
        Lever::RegularRuns,
        Lever::LongRuns,
        Lever::LongRunsFromStart,
        Lever::RareSchedule,
        Lever::ChargeExecTime,
        Lever::ShrinkBudget,
        Lever::AutoDict,
        Lever::SplitConditions,
    ];

    /// The name `BENCH_ABLATION` takes.
    pub fn name(self) -> &'static str {
        match self {
            Lever::CmpProgress => "cmp-progress",
            Lever::CmpProgressFromStart => "cmp-progress-from-start",
            Lever::Cmplog => "cmplog",
            Lever::CmplogTransforms => "cmplog-transforms",
            Lever::CmplogColorize => "cmplog-colorize",
            Lever::CmplogRepair => "cmplog-repair",
            Lever::Havoc => "havoc",
            Lever::RegularRuns => "regular-runs",
            Lever::LongRuns => "long-runs",
            Lever::LongRunsFromStart => "long-runs-from-start",
            Lever::RareSchedule => "rare-schedule",
            Lever::ChargeExecTime => "charge-exec-time",
            Lever::ShrinkBudget => "shrink-budget",
            Lever::AutoDict => "auto-dict",
            Lever::SplitConditions => "split-conditions",
        }
    }

    /// Whether labelfuzz ships with it on.
    pub fn on_by_default(self) -> bool {
        !matches!(
            self,
            Lever::CmpProgressFromStart
                | Lever::CmplogColorize
                | Lever::RegularRuns
                | Lever::LongRunsFromStart
                | Lever::RareSchedule
        )
    }

    /// The flags that flip it from its default.
    pub fn flip_flags(self) -> &'static [&'static str] {
        match self {
            Lever::CmpProgress => &["--cmp-progress", "0"],
            Lever::CmpProgressFromStart => &["--cmp-progress", "1"],
            Lever::Cmplog => &["--cmplog", "0"],
            Lever::CmplogTransforms => &["--cmplog-transforms", "0"],
            Lever::CmplogColorize => &["--cmplog-colorize", "1"],
            Lever::CmplogRepair => &["--cmplog-repair", "0"],
            Lever::Havoc => &["--havoc", "0"],
            Lever::RegularRuns => &["--regular-runs", "1"],
            Lever::LongRuns => &["--long-runs", "0"],
            Lever::LongRunsFromStart => &["--long-runs", "1"],
            Lever::RareSchedule => &["--schedule", "rare"],
            Lever::ChargeExecTime => &["--charge-exec-time", "0"],
            Lever::ShrinkBudget => &["--shrink-budget", "0"],
            Lever::AutoDict => &["--auto-dict", "0"],
            Lever::SplitConditions => &[],
        }
    }

    /// The environment variable that flips it when the fuzzer is built, for a lever that is
    /// part of the build rather than a flag.
    pub fn build_variable(self) -> Option<&'static str> {
        (self == Lever::SplitConditions).then_some("LABELFUZZ_FOLDED_CONDITIONS")
    }

    /// The flipped fuzzer's name in tables.
    pub fn fuzzer_name(self) -> &'static str {
        match self {
            Lever::CmpProgress => "labelfuzz without cmp-progress",
            Lever::CmpProgressFromStart => "labelfuzz with cmp-progress-from-start",
            Lever::Cmplog => "labelfuzz without cmplog",
            Lever::CmplogTransforms => "labelfuzz without cmplog-transforms",
            Lever::CmplogColorize => "labelfuzz with cmplog-colorize",
            Lever::CmplogRepair => "labelfuzz without cmplog-repair",
            Lever::Havoc => "labelfuzz without havoc",
            Lever::RegularRuns => "labelfuzz with regular-runs",
            Lever::LongRuns => "labelfuzz without long-runs",
            Lever::LongRunsFromStart => "labelfuzz with long-runs-from-start",
            Lever::RareSchedule => "labelfuzz with rare-schedule",
            Lever::ChargeExecTime => "labelfuzz without charge-exec-time",
            Lever::ShrinkBudget => "labelfuzz without shrink-budget",
            Lever::AutoDict => "labelfuzz without auto-dict",
            Lever::SplitConditions => "labelfuzz without split-conditions",
        }
    }

    /// The flipped fuzzer's directory name (runs, records, `BENCH_FUZZERS`).
    pub fn dir_name(self) -> &'static str {
        match self {
            Lever::CmpProgress => "labelfuzz-no-cmp-progress",
            Lever::CmpProgressFromStart => "labelfuzz-with-cmp-progress-from-start",
            Lever::Cmplog => "labelfuzz-no-cmplog",
            Lever::CmplogTransforms => "labelfuzz-no-cmplog-transforms",
            Lever::CmplogColorize => "labelfuzz-with-cmplog-colorize",
            Lever::CmplogRepair => "labelfuzz-no-cmplog-repair",
            Lever::Havoc => "labelfuzz-no-havoc",
            Lever::RegularRuns => "labelfuzz-with-regular-runs",
            Lever::LongRuns => "labelfuzz-no-long-runs",
            Lever::LongRunsFromStart => "labelfuzz-with-long-runs-from-start",
            Lever::RareSchedule => "labelfuzz-with-rare-schedule",
            Lever::ChargeExecTime => "labelfuzz-no-charge-exec-time",
            Lever::ShrinkBudget => "labelfuzz-no-shrink-budget",
            Lever::AutoDict => "labelfuzz-no-auto-dict",
            Lever::SplitConditions => "labelfuzz-no-split-conditions",
        }
    }

    /// The levers a `BENCH_ABLATION` value names (comma-separated; empty: none).
    pub fn parse_list(text: &str) -> Result<Vec<Lever>, String> {
        let mut levers = Vec::new();
        for name in text.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            let lever = Lever::ALL
                .into_iter()
                .find(|l| l.name() == name)
                .ok_or_else(|| {
                    let known: Vec<&str> = Lever::ALL.iter().map(|l| l.name()).collect();
                    format!(
                        "BENCH_ABLATION: `{name}` is not a lever (the levers are {})",
                        known.join(", ")
                    )
                })?;
            if !levers.contains(&lever) {
                levers.push(lever);
            }
        }
        levers.sort();
        Ok(levers)
    }
}

/// The fuzzers an ablation runs: labelfuzz as it ships, then with each lever flipped.
pub fn fuzzers(levers: &[Lever]) -> Vec<Fuzzer> {
    std::iter::once(Fuzzer::Labelfuzz)
        .chain(levers.iter().map(|&l| Fuzzer::LabelfuzzFlipped(l)))
        .collect()
}

/// The ablation table: per target, labelfuzz's coverage as it ships, then with each lever
/// flipped with the ratio lever on ÷ lever off (above 1: the lever helps), and the corpus
/// entries.
pub fn table(
    targets: &[&'static Target],
    all: &[Measured],
    levers: &[Lever],
    secs: u64,
    seeds: u64,
) -> String {
    let mut t = String::new();
    let _ = writeln!(
        t,
        "{secs} s per run, {seeds} seed(s), medians over seeds (min–max in brackets), the \
         benchmark's yardstick. Each lever column is labelfuzz with that lever flipped from \
         its default (`with` a lever off by default, `without` one on by default); in brackets \
         after it, lever on ÷ lever off (above 1.00: the lever helps). Corpus entries in the \
         last column, default / each flipped run in order.\n"
    );
    let mut header = String::from("| target | counted | default |");
    let mut rule = String::from("|---|---|---:|");
    for lever in levers {
        let flipped = if lever.on_by_default() {
            "without"
        } else {
            "with"
        };
        let _ = write!(header, " {flipped} {} |", lever.name());
        rule.push_str("---:|");
    }
    let _ = writeln!(t, "{header} corpus entries |\n{rule}---:|");
    for target in targets {
        let on = report::final_spread(all, target, Fuzzer::Labelfuzz, seeds);
        let mut row = format!(
            "| {} | {} | {} |",
            target.name,
            report::yardstick_name(target),
            on.cell
        );
        let mut entries = vec![on.entries];
        for &lever in levers {
            let flipped = report::final_spread(all, target, Fuzzer::LabelfuzzFlipped(lever), seeds);
            let (with, without) = if lever.on_by_default() {
                (on.median, flipped.median)
            } else {
                (flipped.median, on.median)
            };
            let effect =
                report::ratio(with, without).map_or(String::new(), |r| format!(" ({r:.2})"));
            let _ = write!(row, " {}{effect} |", flipped.cell);
            entries.push(flipped.entries);
        }
        let entries: Vec<String> = entries
            .iter()
            .map(|e| e.map_or("–".into(), |e| format!("{e:.0}")))
            .collect();
        let _ = writeln!(t, "{row} {} |", entries.join(" / "));
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levers_are_named_once_and_parsed_in_column_order() {
        assert_eq!(
            Lever::parse_list(" havoc,cmp-progress,havoc "),
            Ok(vec![Lever::CmpProgress, Lever::Havoc])
        );
        assert_eq!(Lever::parse_list(""), Ok(vec![]));
        let error = Lever::parse_list("cmp_progress").unwrap_err();
        assert!(
            error.contains(
                "cmp-progress, cmp-progress-from-start, cmplog, cmplog-transforms, \
                 cmplog-colorize, cmplog-repair, havoc"
            ),
            "{error}"
        );
        for lever in Lever::ALL {
            assert!(lever.dir_name().ends_with(lever.name()));
            assert!(lever.fuzzer_name().ends_with(lever.name()));
            assert!(lever.flip_flags().is_empty() != lever.build_variable().is_none());
        }
    }
}
