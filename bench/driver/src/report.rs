//! Tables (Markdown) from the measured runs (their plots: [`crate::plot`]).

use std::collections::BTreeSet;
use std::fmt::Write as _;

use crate::fuzzers::Fuzzer;
use crate::targets::{Kind, Target};
use crate::util::median;
use crate::yardstick::Coverage;

/// One measured point of a run: the corpus at the end of `minute`.
#[derive(Clone, Copy, Debug)]
pub struct Point {
    pub minute: u64,
    pub coverage: Coverage,
    pub entries: u64,
    pub bytes: u64,
}

/// One run, measured.
pub struct Measured {
    pub target: &'static Target,
    pub fuzzer: Fuzzer,
    pub seed: u64,
    pub points: Vec<Point>,
    pub executions: u64,
    pub wall_secs: f64,
    pub crashes: u64,
    /// The processor the run was done on, as its record names it.
    pub machine: String,
}

impl Measured {
    fn last(&self) -> Option<&Point> {
        self.points.last()
    }

    /// The minute by whose end the run had its final coverage (by `target`'s yardstick): all
    /// three fuzzers flat from their first minutes at one count is a ceiling of the harness, not
    /// a race one of them is losing.
    fn minute_of_last_gain(&self, target: &Target) -> Option<u64> {
        let last = yardstick(target, &self.last()?.coverage);
        self.points
            .iter()
            .find(|p| yardstick(target, &p.coverage) >= last)
            .map(|p| p.minute)
    }
}

/// What a target's table counts: branches, or lines where the build has no branch coverage
/// (stable rustc's `-C instrument-coverage` counts no branches).
pub(crate) fn yardstick(target: &Target, coverage: &Coverage) -> u64 {
    match target.kind {
        Kind::Rust => coverage.lines,
        Kind::Native => coverage.branches,
    }
}

/// The name of what [`yardstick`] counts on `target`.
pub fn yardstick_name(target: &Target) -> &'static str {
    match target.kind {
        Kind::Rust => "lines",
        Kind::Native => "branches",
    }
}

/// Median, minimum and maximum of one number over a fuzzer's seeds on a target.
pub(crate) struct Spread {
    pub(crate) median: f64,
    pub(crate) min: f64,
    pub(crate) max: f64,
}

/// The spread of `values`; `None` when there are none.
pub(crate) fn spread(values: &[f64]) -> Option<Spread> {
    if values.is_empty() {
        return None;
    }
    Some(Spread {
        median: median(values),
        min: values.iter().copied().fold(f64::INFINITY, f64::min),
        max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
    })
}

/// The runs of `fuzzer` on `target`.
pub(crate) fn runs<'a>(all: &'a [Measured], target: &Target, fuzzer: Fuzzer) -> Vec<&'a Measured> {
    all.iter()
        .filter(|m| m.target.name == target.name && m.fuzzer == fuzzer && m.last().is_some())
        .collect()
}

fn final_values(runs: &[&Measured], value: impl Fn(&Measured, &Point) -> f64) -> Vec<f64> {
    runs.iter()
        .filter_map(|m| m.last().map(|p| value(m, p)))
        .collect()
}

/// A table cell: the median over `runs` runs, their range when there are several, and how many
/// runs there are when fewer than the `seeds` asked for have finished.
fn cell(s: &Option<Spread>, runs: usize, seeds: u64) -> String {
    let partial = if (runs as u64) < seeds {
        format!(" [{runs}/{seeds}]")
    } else {
        String::new()
    };
    match s {
        None => "–".into(),
        Some(s) if runs > 1 => format!("{:.0} ({:.0}–{:.0}){partial}", s.median, s.min, s.max),
        Some(s) => format!("{:.0}{partial}", s.median),
    }
}

/// `ours ÷ theirs`, when both were measured and the divisor is not zero.
pub fn ratio(ours: Option<f64>, theirs: Option<f64>) -> Option<f64> {
    match (ours, theirs) {
        (Some(ours), Some(theirs)) if theirs > 0.0 => Some(ours / theirs),
        _ => None,
    }
}

/// One fuzzer's final coverage on a target over its seeds: the table cell, the median, and the
/// median of its corpus entries.
pub struct FinalSpread {
    pub cell: String,
    pub median: Option<f64>,
    pub entries: Option<f64>,
}

/// The final coverage of `fuzzer`'s runs on `target` (by the target's yardstick).
pub fn final_spread(all: &[Measured], target: &Target, fuzzer: Fuzzer, seeds: u64) -> FinalSpread {
    let runs = runs(all, target, fuzzer);
    let s = spread(&final_values(&runs, |_, p| {
        yardstick(target, &p.coverage) as f64
    }));
    FinalSpread {
        cell: cell(&s, runs.len(), seeds),
        median: s.as_ref().map(|s| s.median),
        entries: spread(&final_values(&runs, |_, p| p.entries as f64)).map(|s| s.median),
    }
}

/// One target's final figures for each fuzzer (in [`Fuzzer::ALL`]'s order) and which anchor
/// labelfuzz is compared with.
pub(crate) struct Comparison {
    /// The coverage cells of the first table.
    pub(crate) cells: Vec<String>,
    /// The median final coverage, by the target's yardstick.
    pub(crate) medians: Vec<Option<f64>>,
    /// The median final corpus bytes.
    pub(crate) bytes: Vec<Option<f64>>,
    /// The index of the "best other": the anchor with more coverage (libFuzzer on a tie), whose
    /// corpus is also the one compared.
    pub(crate) best_other: usize,
}

pub(crate) fn compare(all: &[Measured], target: &Target, seeds: u64) -> Comparison {
    let mut cells = Vec::new();
    let mut medians = Vec::new();
    let mut bytes = Vec::new();
    for fuzzer in Fuzzer::ALL {
        let coverage = final_spread(all, target, fuzzer, seeds);
        cells.push(coverage.cell);
        medians.push(coverage.median);
        let runs = runs(all, target, fuzzer);
        bytes.push(spread(&final_values(&runs, |_, p| p.bytes as f64)).map(|s| s.median));
    }
    let best_other = if medians[1].unwrap_or(-1.0) >= medians[2].unwrap_or(-1.0) {
        1
    } else {
        2
    };
    Comparison {
        cells,
        medians,
        bytes,
        best_other,
    }
}

/// The two tables: labelfuzz against the better of the others per target, then every number
/// per fuzzer.
pub fn tables(targets: &[&'static Target], all: &[Measured], secs: u64, seeds: u64) -> String {
    let mut t = String::new();
    let _ = writeln!(
        t,
        "{secs} s per run, {seeds} seed(s) per fuzzer, medians over seeds (min–max in \
         brackets), one fuzzer per core. A cell from fewer runs than that says how many in \
         square brackets ([1/3]: one run of three). Coverage is every final corpus (plus its \
         seeds) replayed through one source-based coverage build of the library; the harness is \
         not counted.\n"
    );
    let _ = writeln!(
        t,
        "| target | counted | labelfuzz | libFuzzer | AFL++ | labelfuzz ÷ best other | \
         corpus bytes labelfuzz / libFuzzer / AFL++ | bytes ÷ best other's |"
    );
    let _ = writeln!(t, "|---|---|---:|---:|---:|---:|---:|---:|");
    for target in targets {
        let Comparison {
            cells,
            medians,
            bytes,
            best_other,
        } = compare(all, target, seeds);
        // The anchor is named only beside a ratio: with nothing to compare, there is no "best".
        let ratio_cell = ratio(medians[0], medians[best_other]).map_or("–".into(), |r| {
            format!("{r:.2} ({})", Fuzzer::ALL[best_other].name())
        });
        let bytes_ratio_cell =
            ratio(bytes[0], bytes[best_other]).map_or("–".into(), |r| format!("{r:.2}"));
        let bytes_cell: Vec<String> = bytes
            .iter()
            .map(|b| b.map_or("–".into(), |b| format!("{b:.0}")))
            .collect();
        let _ = writeln!(
            t,
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            target.name,
            yardstick_name(target),
            cells[0],
            cells[1],
            cells[2],
            ratio_cell,
            bytes_cell.join(" / "),
            bytes_ratio_cell,
        );
    }
    let _ = writeln!(
        t,
        "\n| target | fuzzer | branches | lines | last gain (minute) | corpus entries | corpus bytes | exec/s | crashes |"
    );
    let _ = writeln!(t, "|---|---|---:|---:|---:|---:|---:|---:|---:|");
    for target in targets {
        for fuzzer in Fuzzer::ALL {
            let runs = runs(all, target, fuzzer);
            if runs.is_empty() {
                continue;
            }
            let n = runs.len();
            let value = |f: &dyn Fn(&Measured, &Point) -> f64| {
                cell(&spread(&final_values(&runs, f)), n, seeds)
            };
            let _ = writeln!(
                t,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                target.name,
                fuzzer.name(),
                if target.kind == Kind::Rust {
                    "–".into()
                } else {
                    value(&|_, p| p.coverage.branches as f64)
                },
                value(&|_, p| p.coverage.lines as f64),
                value(&|m, _| m.minute_of_last_gain(target).unwrap_or(0) as f64),
                value(&|_, p| p.entries as f64),
                value(&|_, p| p.bytes as f64),
                value(&|m, _| m.executions as f64 / m.wall_secs.max(1e-3)),
                value(&|m, _| m.crashes as f64),
            );
        }
    }
    let _ = writeln!(
        t,
        "\nLast gain is the minute by whose end a run had its final coverage (by the target's \
         yardstick; measured once a minute, or every few minutes in long runs): fuzzers that all \
         stop gaining early at about one count have reached what the harness lets them cover. \
         Crashes are what each fuzzer keeps: labelfuzz's distinct crash labels, libFuzzer's \
         crash files (it is restarted after each), AFL++'s saved crashes (its own dedup)."
    );
    t
}

/// Which processors the runs were done on. Runs resumed from records may come from other
/// machines; the sentence says so fuzzer by fuzzer and names the targets whose fuzzers did not
/// all run on one processor, since their executions a second do not compare.
pub fn machines(targets: &[&Target], runs: &[Measured]) -> String {
    let processors: BTreeSet<&str> = runs.iter().map(|r| r.machine.as_str()).collect();
    match processors.len() {
        0 => return String::new(),
        1 => return format!("Every run on one processor ({}).\n\n", runs[0].machine),
        _ => {}
    }
    let fuzzers: Vec<String> = Fuzzer::ALL
        .iter()
        .filter_map(|&fuzzer| {
            let counts: Vec<String> = processors
                .iter()
                .filter_map(|&cpu| {
                    let n = runs
                        .iter()
                        .filter(|r| r.fuzzer == fuzzer && r.machine == cpu)
                        .count();
                    (n > 0).then(|| format!("{n} on {cpu}"))
                })
                .collect();
            (!counts.is_empty()).then(|| format!("{} {}", fuzzer.name(), counts.join(", ")))
        })
        .collect();
    let mixed: Vec<&str> = targets
        .iter()
        .filter(|t| {
            let here: BTreeSet<&str> = runs
                .iter()
                .filter(|r| r.target.name == t.name)
                .map(|r| r.machine.as_str())
                .collect();
            here.len() > 1
        })
        .map(|t| t.name)
        .collect();
    format!(
        "The runs were done on more than one machine (each record names its processor): {}. \
         Executions a second compare only between runs on one processor; targets whose fuzzers \
         did not all run on one: {}.\n\n",
        fuzzers.join("; "),
        if mixed.is_empty() {
            "none".to_string()
        } else {
            mixed.join(", ")
        }
    )
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::targets::TARGETS;

    pub(crate) fn run(fuzzer: Fuzzer, seed: u64, branches: u64, bytes: u64) -> Measured {
        Measured {
            target: &TARGETS[0],
            fuzzer,
            seed,
            points: vec![Point {
                minute: 1,
                coverage: Coverage {
                    branches,
                    ..Coverage::default()
                },
                entries: 1,
                bytes,
            }],
            executions: 100,
            wall_secs: 1.0,
            crashes: 0,
            machine: "cpu A".into(),
        }
    }

    #[test]
    fn the_ratio_is_against_the_better_other_fuzzer() {
        let all = vec![
            run(Fuzzer::Labelfuzz, 1, 90, 50),
            run(Fuzzer::Libfuzzer, 1, 60, 400),
            run(Fuzzer::Aflpp, 1, 100, 1000),
        ];
        let text = tables(&[&TARGETS[0]], &all, 60, 1);
        assert!(
            text.contains(
                "| zlib | branches | 90 | 60 | 100 | 0.90 (AFL++) | 50 / 400 / 1000 | 0.05 |"
            ),
            "{text}"
        );
    }

    #[test]
    fn a_row_without_an_anchor_has_no_ratio() {
        let all = vec![run(Fuzzer::Labelfuzz, 1, 90, 50)];
        let text = tables(&[&TARGETS[0]], &all, 60, 1);
        assert!(
            text.contains("| zlib | branches | 90 | – | – | – | 50 / – / – | – |"),
            "{text}"
        );
        let text = tables(&[&TARGETS[0]], &[], 60, 1);
        assert!(
            text.contains("| zlib | branches | – | – | – | – | – / – / – | – |"),
            "{text}"
        );
    }

    #[test]
    fn medians_and_spreads_over_seeds() {
        let all = vec![
            run(Fuzzer::Labelfuzz, 1, 10, 1),
            run(Fuzzer::Labelfuzz, 2, 30, 1),
            run(Fuzzer::Labelfuzz, 3, 20, 1),
        ];
        let text = tables(&[&TARGETS[0]], &all, 60, 3);
        assert!(text.contains("| zlib | branches | 20 (10–30) |"), "{text}");
        let text = tables(&[&TARGETS[0]], &all[..2], 60, 3);
        assert!(
            text.contains("| zlib | branches | 10 (10–30) [2/3] |"),
            "{text}"
        );
        let text = tables(&[&TARGETS[0]], &all[..1], 60, 3);
        assert!(text.contains("| zlib | branches | 10 [1/3] |"), "{text}");
        let svg = crate::plot::plot(&TARGETS[0], &all, 60);
        assert!(svg.starts_with("<svg") && svg.contains("polyline"));
    }

    #[test]
    fn the_last_gain_is_the_first_minute_at_the_final_count() {
        let mut flat = run(Fuzzer::Libfuzzer, 1, 40, 1);
        let mut rising = run(Fuzzer::Labelfuzz, 1, 40, 1);
        for (minute, flat_count, rising_count) in [(2, 40, 45), (3, 40, 50), (4, 40, 50)] {
            let point = |branches| Point {
                minute,
                coverage: Coverage {
                    branches,
                    ..Coverage::default()
                },
                entries: 1,
                bytes: 1,
            };
            flat.points.push(point(flat_count));
            rising.points.push(point(rising_count));
        }
        assert_eq!(flat.minute_of_last_gain(&TARGETS[0]), Some(1));
        assert_eq!(rising.minute_of_last_gain(&TARGETS[0]), Some(3));
        let text = tables(&[&TARGETS[0]], &[rising, flat], 240, 1);
        assert!(
            text.contains("| zlib | labelfuzz | 50 | 0 | 3 | 1 |"),
            "{text}"
        );
        assert!(
            text.contains("| zlib | libFuzzer | 40 | 0 | 1 | 1 |"),
            "{text}"
        );
    }

    #[test]
    fn runs_from_two_processors_are_said_fuzzer_by_fuzzer_and_target_by_target() {
        let targets = [&TARGETS[0]];
        let mut runs = vec![
            run(Fuzzer::Labelfuzz, 1, 10, 1),
            run(Fuzzer::Libfuzzer, 1, 10, 1),
        ];
        assert!(machines(&targets, &runs).starts_with("Every run on one processor (cpu A)"));
        runs[1].machine = "cpu B".into();
        let text = machines(&targets, &runs);
        assert!(
            text.contains("labelfuzz 1 on cpu A; libFuzzer 1 on cpu B. "),
            "{text}"
        );
        assert!(text.contains(&format!("did not all run on one: {}.", TARGETS[0].name)));
    }
}
