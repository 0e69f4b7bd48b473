//! The unit tests of [`super`]: consider and shrink over a plain function's labels.

use super::*;

/// A parser-like target: one label per leading byte of `GOOD` matched, and a crash when the
/// input holds `!!` after the full word.
fn target(input: &[u8]) -> Vec<Label> {
    const GOOD: &[u8] = b"GOOD";
    let matched = input.iter().zip(GOOD).take_while(|(a, b)| a == b).count();
    let mut labels: Vec<Label> = (0..=matched).map(|i| Label::edge(i, 1)).collect();
    if matched == GOOD.len() && input[GOOD.len()..].windows(2).any(|w| w == b"!!") {
        labels.push(Label::crash("panic", "target.rs:1"));
    }
    labels
}

#[test]
fn an_improving_input_is_shrunk_to_the_simplest_that_keeps_its_label() {
    let mut oracle = TableOracle::new(target, 10_000);
    assert!(consider(&mut oracle, b"xyzGOOD and more", true).unwrap());
    // Label 0 (no byte matched): the empty input.
    assert_eq!(oracle.best(Label::edge(0, 1)), Some(&b""[..]));
    // The shrink keeps every candidate that improves *some* label: `G` takes label 1
    // from `GOzzz`, which keeps label 2 until a simpler input shows it.
    assert!(consider(&mut oracle, b"GOzzz", true).unwrap());
    assert_eq!(oracle.best(Label::edge(1, 1)), Some(&b"G"[..]));
    assert_eq!(oracle.best(Label::edge(2, 1)), Some(&b"GOzzz"[..]));
    assert!(consider(&mut oracle, b"GOab", true).unwrap());
    assert_eq!(oracle.best(Label::edge(2, 1)), Some(&b"GO"[..]));
    // Shown again, nothing improves; `GOzzz` holds no label any more.
    assert!(!consider(&mut oracle, b"GOab", true).unwrap());
    assert!(oracle.table.entries().all(|e| e.key != b"GOzzz"));
}

#[test]
fn a_crash_is_shrunk_to_its_minimum_and_keeps_its_label() {
    let mut oracle = TableOracle::new(target, 10_000);
    assert!(consider(&mut oracle, b"GOOD, then a bang !! and some tail", true).unwrap());
    let crash = Label::crash("panic", "target.rs:1");
    assert_eq!(oracle.best(crash), Some(&b"GOOD!!"[..]));
    // The coverage labels it showed on the way have their own minima.
    assert_eq!(oracle.best(Label::edge(4, 1)), Some(&b"GOOD"[..]));
}

/// `target` behind a checksum of the other bytes in the last byte.
fn checked(input: &[u8]) -> Vec<Label> {
    match input.split_last() {
        Some((&sum, body)) if sum == checksum(body) => target(body),
        _ => vec![Label::edge(100, 1)],
    }
}

fn checksum(body: &[u8]) -> u8 {
    // Weighted by position: moving value between bytes (the crash plan's redistribution)
    // changes it too.
    body.iter()
        .fold(7, |sum: u8, &b| sum.wrapping_mul(31).wrapping_add(b))
}

type Target = fn(&[u8]) -> Vec<Label>;

/// A [`TableOracle`] over [`checked`] that repairs a failed checksum, as the program
/// computed it.
struct RepairingOracle {
    table: TableOracle<Target>,
    /// The checksum the last run computed, when the input held another.
    computed: Option<u8>,
}

impl Oracle for RepairingOracle {
    type Error = std::convert::Infallible;

    fn run(&mut self, input: &[u8], skip_seen: bool) -> Result<Outcome, Self::Error> {
        self.computed = input
            .split_last()
            .map(|(_, body)| checksum(body))
            .filter(|&computed| Some(&computed) != input.last());
        self.table.run(input, skip_seen)
    }

    fn repaired(&mut self, input: &[u8]) -> Option<Vec<u8>> {
        let mut repaired = input.to_vec();
        *repaired.last_mut()? = self.computed?;
        Some(repaired)
    }

    fn stopped(&self) -> bool {
        self.table.stopped()
    }
}

#[test]
fn a_crash_behind_a_checksum_shrinks_as_far_as_one_without_when_the_oracle_repairs() {
    let mut long = b"GOOD, then a bang !! and some tail".to_vec();
    long.push(checksum(&long));
    let crash = Label::crash("panic", "target.rs:1");
    let mut minimal = b"GOOD!!".to_vec();
    minimal.push(checksum(&minimal));

    let mut plain = TableOracle::new(checked as Target, 10_000);
    assert!(consider(&mut plain, &long, true).unwrap());
    let unrepaired = plain.best(crash).unwrap();
    assert!(
        unrepaired.len() > minimal.len(),
        "without repair almost every candidate breaks the checksum: {unrepaired:?}"
    );

    let mut repairing = RepairingOracle {
        table: TableOracle::new(checked, 10_000),
        computed: None,
    };
    // A broken checksum is repaired before anything else runs.
    let mut broken = long.clone();
    *broken.last_mut().unwrap() ^= 1;
    assert!(consider(&mut repairing, &broken, true).unwrap());
    assert_eq!(repairing.table.best(crash), Some(&minimal[..]));
    let mut good = b"GOOD".to_vec();
    good.push(checksum(&good));
    assert_eq!(repairing.table.best(Label::edge(4, 1)), Some(&good[..]));
}

/// A [`TableOracle`] over [`target`] whose coverage shrinks may run `budget` candidates.
struct BudgetedOracle {
    table: TableOracle<Target>,
    budget: u64,
    left: u64,
}

impl Oracle for BudgetedOracle {
    type Error = std::convert::Infallible;

    fn run(&mut self, input: &[u8], skip_seen: bool) -> Result<Outcome, Self::Error> {
        self.table.run(input, skip_seen)
    }

    fn coverage_shrink_began(&mut self) {
        self.left = self.budget;
    }

    fn run_coverage_candidate(&mut self, input: &[u8]) -> Result<Outcome, Self::Error> {
        if self.left == 0 {
            return Ok(Outcome::Deferred);
        }
        self.left -= 1;
        self.table.run(input, true)
    }

    fn stopped(&self) -> bool {
        self.table.stopped()
    }
}

/// One label: how many `a` bytes the input holds.
fn count_of_a(input: &[u8]) -> Vec<Label> {
    vec![Label::edge(input.iter().filter(|&&b| b == b'a').count(), 1)]
}

#[test]
fn a_coverage_shrink_the_oracle_cuts_short_keeps_what_it_reached() {
    let long = b"a-a-a-a-a-a-a-a";
    let eight = Label::edge(8, 1);
    let oracle = |budget| BudgetedOracle {
        table: TableOracle::new(count_of_a as Target, 10_000),
        budget,
        left: 0,
    };
    let mut unbounded = oracle(u64::MAX);
    consider(&mut unbounded, long, true).unwrap();
    // Each candidate with fewer `a`s shows a label of its own, down to the empty input.
    let none = Label::edge(0, 1);
    assert_eq!(unbounded.table.best(none), Some(&b""[..]));
    let full = unbounded.table.executions;
    assert!(full > 3, "{full}");

    let mut cut = oracle(2);
    assert!(consider(&mut cut, long, true).unwrap());
    // The input itself and at most two candidates: the shrink ends before the bottom.
    assert!(cut.table.executions <= 3, "{}", cut.table.executions);
    assert_eq!(cut.table.best(none), None);
    assert_eq!(cut.table.best(eight), Some(&long[..]));
    // A later consider shrinks again, with a budget of its own.
    let before = cut.table.executions;
    assert!(consider(&mut cut, b"a-a-a", true).unwrap());
    assert!(cut.table.executions > before + 1);
    assert!(cut.table.executions <= before + 3);
}

#[test]
fn the_run_stops_at_the_oracle_limit() {
    let mut oracle = TableOracle::new(target, 3);
    consider(&mut oracle, b"GOOD, then a bang !! and some tail", true).unwrap();
    assert_eq!(oracle.executions, 3);
    assert!(oracle.stopped());
}
