//! Walks one input through the core (docs/core.md prints this example's output): a toy target,
//! the table oracle, and `consider` on one input that reaches a crash, with every execution
//! printed as it happens.
//!
//! `cargo run -p labelfuzz-core --example walk`

use std::cell::RefCell;

use labelfuzz_core::consider::{consider, TableOracle};
use labelfuzz_core::table::LabelTable;
use labelfuzz_core::Label;

/// One label per leading byte of `GOOD` matched (as if each comparison were a branch), and a
/// crash when `!!` follows the whole word.
fn toy_target(input: &[u8]) -> Vec<Label> {
    const GOOD: &[u8] = b"GOOD";
    let matched = input.iter().zip(GOOD).take_while(|(a, b)| a == b).count();
    let mut labels: Vec<Label> = (0..=matched).map(|i| Label::edge(i, 1)).collect();
    if matched == GOOD.len() && input[GOOD.len()..].windows(2).any(|w| w == b"!!") {
        labels.push(Label::crash("panic", "toy.rs:9"));
    }
    labels
}

fn main() {
    let log = RefCell::new(Vec::new());
    let target = |input: &[u8]| {
        let labels = toy_target(input);
        log.borrow_mut().push((input.to_vec(), labels.clone()));
        labels
    };
    let mut oracle = TableOracle::new(target, 1_000);
    let input = b"GOOD, then !! and a tail";
    let improved = consider(&mut oracle, input, true).unwrap_or(false);

    println!("consider({:?}) improved a label: {improved}", text(input));
    println!("executions: {}", oracle.executions);
    println!();
    // The executions that improved a label, found by replaying the log into a fresh table
    // (the oracle's own table made the same decisions).
    println!("| execution | input | labels it improved |");
    println!("|---|---|---|");
    let mut replay = LabelTable::<usize>::new();
    for (n, (input, labels)) in log.borrow().iter().enumerate() {
        let improved = replay.record(input, n, labels).improved;
        if !improved.is_empty() {
            let improved: Vec<String> = improved.iter().map(ToString::to_string).collect();
            println!(
                "| {} | `{}` | {} |",
                n + 1,
                text(input),
                improved.join(", ")
            );
        }
    }
    println!();
    println!("| label | best input |");
    println!("|---|---|");
    let mut labels = oracle.table.labels().to_vec();
    labels.sort_by_key(|l| l.to_string());
    for label in labels {
        let best = oracle.best(label).unwrap_or_default();
        println!("| {label} | `{}` |", text(best));
    }
}

/// An input as printable text.
fn text(input: &[u8]) -> String {
    String::from_utf8_lossy(input).into_owned()
}
