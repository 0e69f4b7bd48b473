//! The first table read in words ([`reading`]), written with the tables so that no figure about
//! them is typed by hand.

use std::fmt::Write as _;

use crate::fuzzers::Fuzzer;
use crate::report::{compare, ratio, yardstick_name, Measured};
use crate::targets::Target;

/// The first table read in words, so that no figure about it is typed by hand: where labelfuzz
/// covers more than the better anchor and where less (by how much, against which), how many
/// targets reach the 1.05 and 1.1 marks, and its corpus against the better anchor's.
pub fn reading(targets: &[&'static Target], all: &[Measured], seeds: u64) -> String {
    let mut ahead = Vec::new();
    let mut level = Vec::new();
    let mut behind = Vec::new();
    let mut ratios = Vec::new();
    let mut byte_ratios = Vec::new();
    let mut smallest = 0;
    for target in targets {
        let c = compare(all, target, seeds);
        let (Some(ours), Some(theirs), Some(against)) = (
            c.medians[0],
            c.medians[c.best_other],
            ratio(c.medians[0], c.medians[c.best_other]),
        ) else {
            continue;
        };
        let anchor = Fuzzer::ALL[c.best_other].name();
        let gap = ours - theirs;
        // "1 branch", "1 line": the yardstick's name is a plural.
        let unit = match (yardstick_name(target), gap.abs() == 1.0) {
            ("branches", true) => "branch",
            ("lines", true) => "line",
            (plural, _) => plural,
        };
        let percent = 100.0 * gap.abs() / theirs.max(1.0);
        let said = format!(
            "{} ({:.0} {unit}, {percent:.1} %, {} {anchor})",
            target.name,
            gap.abs(),
            if gap > 0.0 { "more than" } else { "fewer than" }
        );
        match gap {
            g if g > 0.0 => ahead.push(said),
            g if g < 0.0 => behind.push(said),
            _ => level.push(format!("{} (with {anchor})", target.name)),
        }
        ratios.push(against);
        if let (Some(b), Some(bytes_against)) =
            (c.bytes[0], ratio(c.bytes[0], c.bytes[c.best_other]))
        {
            byte_ratios.push(bytes_against);
            let others_smallest = c.bytes[1..]
                .iter()
                .flatten()
                .fold(f64::INFINITY, |a, &b| a.min(b));
            if b < others_smallest {
                smallest += 1;
            }
        }
    }
    if ratios.is_empty() {
        return String::new();
    }
    let list = |items: &[String]| {
        if items.is_empty() {
            "none".to_string()
        } else {
            items.join(", ")
        }
    };
    let at_least = |mark: f64| ratios.iter().filter(|&&r| r >= mark - 1e-9).count();
    let mut text = format!(
        "Read from the first table (written with it; medians over seeds): labelfuzz covers more \
         than the better anchor on {}; as much on {}; less on {}. It is at least 1.05× the \
         better anchor on {} of {} targets and at least 1.1× on {}.",
        list(&ahead),
        list(&level),
        list(&behind),
        at_least(1.05),
        ratios.len(),
        at_least(1.1),
    );
    if !byte_ratios.is_empty() {
        let lo = byte_ratios.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = byte_ratios
            .iter()
            .copied()
            .fold(f64::NEG_INFINITY, f64::max);
        let _ = write!(
            text,
            " Its corpus is the smallest of the three on {smallest} of {} targets, {lo:.2} to \
             {hi:.2} of the better anchor's bytes.",
            byte_ratios.len()
        );
    }
    text.push_str("\n\n");
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests::run;
    use crate::targets::TARGETS;

    #[test]
    fn the_reading_says_where_labelfuzz_leads_and_trails_and_by_how_much() {
        let targets = [&TARGETS[0], &TARGETS[1]];
        let mut all = vec![
            run(Fuzzer::Labelfuzz, 1, 110, 50),
            run(Fuzzer::Libfuzzer, 1, 60, 400),
            run(Fuzzer::Aflpp, 1, 100, 1000),
        ];
        let mut second = run(Fuzzer::Labelfuzz, 1, 95, 300);
        second.target = &TARGETS[1];
        all.push(second);
        let mut anchor = run(Fuzzer::Aflpp, 1, 96, 200);
        anchor.target = &TARGETS[1];
        all.push(anchor);
        let text = reading(&targets, &all, 1);
        let (first, other) = (TARGETS[0].name, TARGETS[1].name);
        assert!(
            text.contains(&format!(
                "more than the better anchor on {first} (10 branches, 10.0 %, more than AFL++); \
                 as much on none; less on {other} (1 branch, 1.0 %, fewer than AFL++)."
            )),
            "{text}"
        );
        assert!(
            text.contains(
                "at least 1.05× the better anchor on 1 of 2 targets and at least 1.1× on 1."
            ),
            "{text}"
        );
        assert!(
            text.contains("smallest of the three on 1 of 2 targets, 0.05 to 1.50"),
            "{text}"
        );
        assert_eq!(reading(&targets, &[], 1), "");
    }
}
