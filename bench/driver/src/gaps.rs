//! `BENCH_ONLY=gaps`: what another fuzzer's corpus covers that labelfuzz's does not, branch side
//! by branch side and function by function, so that a row where labelfuzz is behind says where.
//!
//! For each chosen target (`BENCH_TARGETS`), the last snapshot of every seed of each fuzzer's
//! runs still on this machine (`target/bench/<BENCH_SECS>s/runs/<target>/<fuzzer>/`, plus the
//! seeds the runs started from) is replayed through the target's coverage build with the
//! tables' yardstick, and the merged profile is exported as LCOV. The library's covered branch
//! sides (the tables' "branches"; lines on targets the tables count by lines) of each fuzzer are
//! then set against labelfuzz's, and the ones only one of them reaches are grouped by the
//! function they lie in.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::fuzzers::{run_dir, Fuzzer};
use crate::targets::{Kind, Target, TARGETS};
use crate::util::{dirs_in, env_secs, files_in, fresh_dir, root, BuildLock};

/// One covered point of the library: a branch side (file, line, block, branch index in LCOV's
/// numbering) or a line (block and branch `u32::MAX`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Point {
    file: String,
    line: u32,
    block: u32,
    branch: u32,
}

/// A coverage export read from LCOV: the covered points, and where each file's functions begin.
#[derive(Debug, Default)]
struct Covered {
    points: BTreeSet<Point>,
    /// Per file, the first line of each function and its name.
    functions: BTreeMap<String, BTreeMap<u32, String>>,
}

impl Covered {
    /// The function `point` lies in: the last one in its file that begins at or before its line.
    fn function_of(&self, point: &Point) -> String {
        self.functions
            .get(&point.file)
            .and_then(|starts| starts.range(..=point.line).next_back())
            .map_or_else(
                || "(outside any function)".to_string(),
                |(_, name)| name.clone(),
            )
    }
}

/// Reads `llvm-cov export -format=lcov` output, keeping the files `keep` accepts: covered branch
/// sides when `lines` is false, covered lines when it is true.
fn read_lcov(text: &str, lines: bool, keep: impl Fn(&str) -> bool) -> Covered {
    let mut covered = Covered::default();
    let mut file: Option<String> = None;
    for record in text.lines() {
        let (tag, value) = record.split_once(':').unwrap_or((record, ""));
        if tag == "SF" {
            file = keep(value).then(|| value.to_string());
            continue;
        }
        if tag == "end_of_record" {
            file = None;
            continue;
        }
        let Some(file) = &file else { continue };
        let fields: Vec<&str> = value.split(',').collect();
        let number = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok());
        let line = || number(0).and_then(|l| u32::try_from(l).ok());
        match tag {
            "FN" => {
                if let (Some(start), Some(name)) = (line(), fields.get(1)) {
                    // Static functions are named `file.c:name`; the file is in the table already.
                    let name = match name.split_once(':') {
                        Some((file, rest)) if file.contains('.') && !rest.starts_with(':') => rest,
                        _ => name,
                    };
                    covered
                        .functions
                        .entry(file.clone())
                        .or_default()
                        .insert(start, name.to_string());
                }
            }
            "DA" if lines => {
                if let (Some(line), Some(count)) = (line(), number(1)) {
                    if count > 0 {
                        covered.points.insert(Point {
                            file: file.clone(),
                            line,
                            block: u32::MAX,
                            branch: u32::MAX,
                        });
                    }
                }
            }
            "BRDA" if !lines => {
                // BRDA:<line>,<block>,<branch>,<taken> ("-": the block never ran).
                let index = |i: usize| number(i).and_then(|n| u32::try_from(n).ok());
                if let (Some(line), Some(block), Some(branch), Some(taken)) =
                    (line(), index(1), index(2), number(3))
                {
                    if taken > 0 {
                        covered.points.insert(Point {
                            file: file.clone(),
                            line,
                            block,
                            branch,
                        });
                    }
                }
            }
            _ => {}
        }
    }
    covered
}

/// Whether `file` is the library's, as the tables count it: not the harness, the system's or
/// the Rust toolchain's. The same test as `yardstick::library_coverage`'s, and [`llvm_cov`] the
/// same choice as its `tools`: yardstick.rs is in every fuzzer's run fingerprint
/// (`ledger::sources`), so exposing them there would make every record stale; merge them the
/// next time the yardstick changes anyway.
fn library_file(target: &Target, file: &str) -> bool {
    !(target.is_harness(file)
        || file.starts_with("/usr/")
        || file.contains("/rustc/")
        || file.contains("/.rustup/"))
}

/// The inputs of `fuzzer`'s runs on `target` kept under `bench`: the last snapshot of each seed
/// kept, and the seeds they started from; with how many runs they come from.
fn final_corpora(bench: &Path, target: &Target, fuzzer: Fuzzer) -> (Vec<PathBuf>, usize) {
    // Every seed directory there is, not 1, 2, … up to the first missing one: a machine that
    // resumed a bench keeps only the runs it did itself, which may be seed 3 alone.
    let fuzzer_dir = run_dir(bench, target.name, fuzzer, 1);
    let seed_dirs = fuzzer_dir.parent().map(dirs_in).unwrap_or_default();
    let mut inputs = Vec::new();
    let mut runs = 0;
    for dir in seed_dirs {
        if let Some(last) = dirs_in(&dir.join("snapshots")).pop() {
            inputs.extend(files_in(&dir.join("seeds")));
            inputs.extend(files_in(&last));
            runs += 1;
        }
    }
    (inputs, runs)
}

/// What `inputs` cover of `target`'s library, replayed through `coverage_binary`.
fn coverage_of(
    target: &Target,
    coverage_binary: &Path,
    inputs: &[PathBuf],
    scratch: &Path,
) -> Covered {
    let lines = target.kind == Kind::Rust;
    // The yardstick replays and merges into `merged.profdata` in its scratch directory; the
    // export here reads that profile again, whole rather than as a summary.
    let summary = crate::yardstick::measure(target, coverage_binary, inputs, scratch, 0);
    let merged = scratch.join("merged.profdata");
    if !merged.exists() {
        // No profile is only right when nothing ran; a yardstick that stopped leaving its
        // profile behind must not read as a corpus that covers nothing.
        assert_eq!(
            summary,
            crate::yardstick::Coverage::default(),
            "the yardstick left no merged.profdata in {}",
            scratch.display()
        );
        return Covered::default();
    }
    let (_, cov) = crate::yardstick::tools(target.kind);
    let lcov = crate::yardstick::export(&cov, &merged, coverage_binary, &["-format=lcov"], 0);
    read_lcov(&String::from_utf8_lossy(&lcov), lines, |file| {
        library_file(target, file)
    })
}

/// One function's share of the difference between two corpora.
#[derive(Debug, PartialEq, Eq)]
struct FunctionGap {
    function: String,
    file: String,
    /// The first and last line of the points only the other fuzzer covers.
    lines: (u32, u32),
    /// Points only the other fuzzer covers.
    only_other: usize,
    /// Points of the same function only labelfuzz covers.
    only_labelfuzz: usize,
}

/// The functions holding points `other` covers and `labelfuzz` does not, most such points
/// first.
fn differences(labelfuzz: &Covered, other: &Covered) -> Vec<FunctionGap> {
    let mut per_function: BTreeMap<(String, String), FunctionGap> = BTreeMap::new();
    for point in other.points.difference(&labelfuzz.points) {
        let function = other.function_of(point);
        let gap = per_function
            .entry((function.clone(), point.file.clone()))
            .or_insert_with(|| FunctionGap {
                function,
                file: point.file.clone(),
                lines: (point.line, point.line),
                only_other: 0,
                only_labelfuzz: 0,
            });
        gap.lines = (gap.lines.0.min(point.line), gap.lines.1.max(point.line));
        gap.only_other += 1;
    }
    for point in labelfuzz.points.difference(&other.points) {
        let key = (labelfuzz.function_of(point), point.file.clone());
        if let Some(gap) = per_function.get_mut(&key) {
            gap.only_labelfuzz += 1;
        }
    }
    let mut gaps: Vec<FunctionGap> = per_function.into_values().collect();
    gaps.sort_by(|a, b| {
        b.only_other
            .cmp(&a.only_other)
            .then_with(|| a.lines.cmp(&b.lines))
    });
    gaps
}

/// Writes the table of `rows` (the functions where `other` reaches what labelfuzz does not),
/// the first [`MOST_FUNCTIONS`] of them, then the rest as one line.
fn write_gaps(text: &mut String, rows: &[FunctionGap], other: &str, unit: &str) {
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(
        text,
        "| function | file | lines | {unit} only {other} reaches | only labelfuzz, same function |\n\
         |---|---|---|---:|---:|"
    );
    for gap in rows.iter().take(MOST_FUNCTIONS) {
        let file = Path::new(&gap.file)
            .file_name()
            .and_then(|name| name.to_str())
            .unwrap_or(&gap.file);
        let _ = writeln!(
            text,
            "| {} | {file} | {}–{} | {} | {} |",
            gap.function, gap.lines.0, gap.lines.1, gap.only_other, gap.only_labelfuzz
        );
    }
    if rows.len() > MOST_FUNCTIONS {
        let rest: usize = rows[MOST_FUNCTIONS..]
            .iter()
            .map(|gap| gap.only_other)
            .sum();
        let _ = writeln!(
            text,
            "| {} more functions | | | {rest} | |",
            rows.len() - MOST_FUNCTIONS
        );
    }
    text.push('\n');
}

/// The functions listed per fuzzer and target.
const MOST_FUNCTIONS: usize = 12;

/// `BENCH_ONLY=gaps`: the report, for the targets in `BENCH_TARGETS` (all by default) and the runs
/// of `BENCH_SECS` (600 by default); `work` is its scratch directory.
pub fn gaps(work: &Path) -> String {
    let secs = env_secs("BENCH_SECS", 600);
    let chosen = std::env::var("BENCH_TARGETS").unwrap_or_default();
    let bench = root().join(format!("target/bench/{secs}s"));
    let mut text = format!(
        "The final corpora of the {secs} s runs kept on this machine (every seed's last \
         snapshot, with the seeds), replayed through each target's coverage build; what another \
         fuzzer covers of the library that labelfuzz's runs do not, by function.\n"
    );
    for target in TARGETS
        .iter()
        .filter(|t| chosen.is_empty() || chosen.split(',').any(|c| c.trim() == t.name))
    {
        let unit = if target.kind == Kind::Rust {
            "lines"
        } else {
            "branch sides"
        };
        let corpora: Vec<(Fuzzer, Vec<PathBuf>, usize)> = Fuzzer::ALL
            .iter()
            .map(|&fuzzer| {
                let (inputs, runs) = final_corpora(&bench, target, fuzzer);
                (fuzzer, inputs, runs)
            })
            .filter(|(_, _, runs)| *runs > 0)
            .collect();
        let _ = write!(text, "\n### {}\n\n", target.name);
        if corpora
            .first()
            .is_none_or(|(f, _, _)| *f != Fuzzer::Labelfuzz)
            || corpora.len() < 2
        {
            let kept: Vec<&str> = corpora.iter().map(|(f, _, _)| f.name()).collect();
            let _ = writeln!(
                text,
                "Runs kept here: {}; labelfuzz's and another fuzzer's are needed.",
                if kept.is_empty() {
                    "none".to_string()
                } else {
                    kept.join(", ")
                }
            );
            continue;
        }
        let coverage_binary = {
            let _one_at_a_time = BuildLock::acquire();
            target.coverage_build()
        };
        let covered: Vec<(Fuzzer, usize, Covered)> = corpora
            .iter()
            .map(|(fuzzer, inputs, runs)| {
                let scratch =
                    fresh_dir(&work.join(format!("{}-{}", target.name, fuzzer.dir_name())));
                (
                    *fuzzer,
                    *runs,
                    coverage_of(target, &coverage_binary, inputs, &scratch),
                )
            })
            .collect();
        let (_, labelfuzz_runs, labelfuzz) = &covered[0];
        for (fuzzer, runs, other) in &covered[1..] {
            let only_other = other.points.difference(&labelfuzz.points).count();
            let only_labelfuzz = labelfuzz.points.difference(&other.points).count();
            let _ = writeln!(
                text,
                "{} ({runs} run(s)) covers {} {unit}, labelfuzz ({labelfuzz_runs} run(s)) {}: {only_other} \
                 only {}'s corpus reaches, {only_labelfuzz} only labelfuzz's.\n",
                fuzzer.name(),
                other.points.len(),
                labelfuzz.points.len(),
                fuzzer.name(),
            );
            write_gaps(
                &mut text,
                &differences(labelfuzz, other),
                fuzzer.name(),
                unit,
            );
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    const LCOV: &str = "SF:/src/lib/inflate.c
FN:10,inflate
FN:40,inflate.c:window
BRDA:12,0,0,5
BRDA:12,0,1,0
BRDA:41,0,0,-
BRDA:41,0,1,-
BRDA:44,1,2,3
DA:11,1
DA:41,0
end_of_record
SF:/work/fuzzers/zlib/harness.c
FN:1,LLVMFuzzerTestOneInput
BRDA:2,0,0,9
end_of_record
";

    #[test]
    fn taken_branch_sides_of_kept_files_are_read_with_their_functions() {
        let covered = read_lcov(LCOV, false, |f| !f.contains("/fuzzers/"));
        let sides: Vec<(u32, u32, u32)> = covered
            .points
            .iter()
            .map(|p| (p.line, p.block, p.branch))
            .collect();
        assert_eq!(
            sides,
            vec![(12, 0, 0), (44, 1, 2)],
            "untaken and unrun sides are not covered"
        );
        let names: Vec<String> = covered
            .points
            .iter()
            .map(|p| covered.function_of(p))
            .collect();
        assert_eq!(names, vec!["inflate", "window"]);
        let lines = read_lcov(LCOV, true, |f| !f.contains("/fuzzers/"));
        assert_eq!(
            lines.points.iter().map(|p| p.line).collect::<Vec<_>>(),
            vec![11]
        );
    }

    #[test]
    fn differences_are_grouped_by_function_most_first() {
        let labelfuzz = read_lcov(LCOV, false, |_| true);
        let mut other = read_lcov(LCOV, false, |_| true);
        other.points.retain(|p| p.line != 12);
        for (line, branch) in [(41, 0), (41, 1), (13, 1)] {
            other.points.insert(Point {
                file: "/src/lib/inflate.c".into(),
                line,
                block: 0,
                branch,
            });
        }
        let rows = differences(&labelfuzz, &other);
        let summary: Vec<(&str, (u32, u32), usize, usize)> = rows
            .iter()
            .map(|gap| {
                (
                    gap.function.as_str(),
                    gap.lines,
                    gap.only_other,
                    gap.only_labelfuzz,
                )
            })
            .collect();
        assert_eq!(
            summary,
            vec![("window", (41, 41), 2, 0), ("inflate", (13, 13), 1, 1)]
        );
    }
}
