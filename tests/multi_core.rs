//! Multi-core and multi-machine runs: clients exchange inputs through LLMP brokers.

mod common;

use std::path::Path;

use common::{build_fuzzer, run, scratch, summary};

fn client_summary(out: &Path, index: usize) -> serde_json::Value {
    let text = std::fs::read(out.join(format!("clients/{index}.json"))).expect("client summary");
    serde_json::from_slice(&text).expect("client summary is JSON")
}

fn reproducers(out: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(out.join("crashes"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with('.'))
        .collect();
    names.sort();
    names
}

#[test]
fn two_clients_exchange_labels_and_the_summary_adds_them_up() {
    let fuzzer = build_fuzzer("json");
    let out = scratch("two-cores");
    let result = run(
        &fuzzer,
        &[
            "--cores",
            "0-1",
            "--max-time",
            "6",
            "--seed",
            "1",
            "-o",
            out.to_str().unwrap(),
        ],
    );
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert_eq!(result.status.code(), Some(0), "{stderr}");
    let total = summary(&out);
    assert_eq!(total["clients"], 2, "{total}");
    let (first, second) = (client_summary(&out, 1), client_summary(&out, 2));
    // Each client's table took in inputs the other found first.
    for client in [&first, &second] {
        assert!(client["imported"].as_u64().unwrap() > 0, "{client}");
    }
    assert_eq!(
        total["executions"].as_u64().unwrap(),
        first["executions"].as_u64().unwrap() + second["executions"].as_u64().unwrap()
    );
    // Tables converge: neither holds many labels the other lacks.
    let (a, b) = (
        first["labels"].as_f64().unwrap(),
        second["labels"].as_f64().unwrap(),
    );
    assert!((a - b).abs() < 0.2 * a.max(b), "{a} vs {b} labels");
}

#[test]
fn two_clients_keep_one_reproducer_per_crash_label() {
    let fuzzer = build_fuzzer("planted");
    let out = scratch("two-cores-crashes");
    let result = run(
        &fuzzer,
        &["-jobs=2", "--max-time", "3", "-o", out.to_str().unwrap()],
    );
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert_eq!(result.status.code(), Some(1), "{stderr}");
    let total = summary(&out);
    assert_eq!(total["clients"], 2, "{total}");
    // Both clients find all three planted bugs; each label has one file, the minimal input.
    assert_eq!(total["crashes"].as_array().unwrap().len(), 3, "{total}");
    let files = reproducers(&out);
    assert_eq!(files.len(), 3, "{files:?}");
    let mut inputs: Vec<Vec<u8>> = files
        .iter()
        .map(|f| std::fs::read(out.join("crashes").join(f)).unwrap())
        .collect();
    inputs.sort();
    assert_eq!(
        inputs,
        vec![
            b"+\x01\xff".to_vec(),
            b"B\x00\xff".to_vec(),
            b"FUZZ".to_vec()
        ]
    );
}
