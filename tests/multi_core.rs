//! Multi-core and multi-machine runs: clients exchange inputs through LLMP brokers.

mod common;

use std::path::Path;
use std::time::Duration;

use common::{build_fuzzer, free_port, run_bounded, scratch, summary, Group};

fn client_summary(out: &Path, index: usize) -> serde_json::Value {
    let text = std::fs::read(out.join(format!("clients/{index}.json"))).expect("client summary");
    serde_json::from_slice(&text).expect("client summary is JSON")
}

fn reproducers(out: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(out.join("crashes"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| labelfuzz::output::is_input_file(n))
        .collect();
    names.sort();
    names
}

#[test]
fn two_clients_exchange_labels_and_the_summary_adds_them_up() {
    let fuzzer = build_fuzzer("json");
    let out = scratch("two-cores");
    common::run_expecting(
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
        Duration::from_secs(90),
        0,
    );
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
    common::run_expecting(
        &fuzzer,
        &["-jobs=2", "--max-time", "3", "-o", out.to_str().unwrap()],
        Duration::from_secs(90),
        // libFuzzer's flag, libFuzzer's exit status for a crash.
        77,
    );
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

fn corpus_inputs(out: &Path) -> Vec<Vec<u8>> {
    std::fs::read_dir(out.join("corpus"))
        .map(|dir| {
            dir.flatten()
                .filter_map(|e| std::fs::read(e.path()).ok())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn two_runs_linked_broker_to_broker_exchange_a_label() {
    let fuzzer = build_fuzzer("planted");
    let dir = scratch("broker-link");
    let (here, there) = (dir.join("here"), dir.join("there"));
    let seeds = dir.join("seeds");
    std::fs::create_dir_all(&seeds).unwrap();
    // planted's sealed label: only an input that already has these bytes covers it.
    std::fs::write(seeds.join("sesame"), b"sesame!!").unwrap();
    let port_number = free_port();
    let port = port_number.to_string();
    let remote = format!("127.0.0.1:{port}");
    // "There" runs without seeds; "here" links to its broker and has the seed.
    let there_run = Group::start(
        &fuzzer,
        &[
            "--cores",
            "1",
            "--broker-port",
            &port,
            "--max-time",
            "12",
            "--seed",
            "1",
            "-o",
            there.to_str().unwrap(),
        ],
    );
    common::wait_for_listener(port_number);
    let here_run = Group::start(
        &fuzzer,
        &[
            "--cores",
            "0",
            "--remote-broker",
            &remote,
            "--max-time",
            "8",
            "--seed",
            "2",
            "-o",
            here.to_str().unwrap(),
            seeds.to_str().unwrap(),
        ],
    );
    let here_result = here_run.wait(Duration::from_secs(90));
    let there_result = there_run.wait(Duration::from_secs(90));
    for result in [&here_result, &there_result] {
        let stderr = String::from_utf8_lossy(&result.stderr);
        // Both find planted's crashes on their own (crashes are not sent).
        assert_eq!(result.status.code(), Some(1), "{stderr}");
    }
    let sealed = |out: &Path| {
        corpus_inputs(out)
            .iter()
            .any(|input| input.starts_with(b"sesame!!"))
    };
    assert!(sealed(&here), "the seed's label is in its own corpus");
    assert!(
        sealed(&there),
        "the sealed label crossed the link: {:?}",
        corpus_inputs(&there)
    );
    let there_summary = summary(&there);
    assert!(
        there_summary["imported"].as_u64().unwrap() >= 1,
        "{there_summary}"
    );
    assert_eq!(
        there_summary["clients"], 1,
        "remote clients are not counted as ours"
    );
}

#[test]
fn an_unreachable_remote_broker_is_named() {
    let fuzzer = build_fuzzer("planted");
    let out = scratch("broker-unreachable");
    let port = free_port();
    let remote = format!("127.0.0.1:{port}");
    let stderr = common::run_expecting(
        &fuzzer,
        &[
            "--remote-broker",
            &remote,
            "--runs",
            "10",
            "-o",
            out.to_str().unwrap(),
        ],
        Duration::from_secs(60),
        2,
    );
    assert!(
        stderr.contains(&format!("cannot reach the remote broker {remote}")),
        "{stderr}"
    );
    for (value, needle) in [
        ("localhost", "is not HOST:PORT"),
        ("localhost:0", "is not a port number"),
        (
            "no-such-host.invalid:4000",
            "cannot resolve host `no-such-host.invalid`",
        ),
    ] {
        let result = run_bounded(
            &fuzzer,
            &["--remote-broker", value, "-o", out.to_str().unwrap()],
            Duration::from_secs(60),
        );
        let stderr = String::from_utf8_lossy(&result.stderr);
        assert_eq!(result.status.code(), Some(2), "{value}: {stderr}");
        assert!(stderr.contains(needle), "{value}: {stderr}");
    }
}

#[test]
fn ctrl_c_and_sigterm_stop_every_client_and_write_the_merged_summary() {
    let fuzzer = build_fuzzer("planted");
    // Ctrl-C in a terminal: SIGINT to every process of the foreground group. `kill`, `timeout`
    // and service managers: SIGTERM to the launching process alone.
    for (signal, name, whole_group) in [
        (libc::SIGINT, "sigint", true),
        (libc::SIGTERM, "sigterm", false),
    ] {
        let out = scratch(&format!("two-cores-{name}"));
        let run = Group::start(&fuzzer, &["-jobs=2", "-o", out.to_str().unwrap()]);
        let started = std::time::Instant::now();
        while !out.join("clients/2.json").exists() || !out.join("clients/1.json").exists() {
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "{name}: both clients report"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        std::thread::sleep(Duration::from_secs(2));
        if whole_group {
            run.signal(signal);
        } else {
            run.signal_leader(signal);
        }
        let signalled = std::time::Instant::now();
        let result = run.wait(Duration::from_secs(30));
        assert!(
            signalled.elapsed() < Duration::from_secs(10),
            "{name}: stopped promptly"
        );
        let stderr = String::from_utf8_lossy(&result.stderr);
        // Started with libFuzzer's `-jobs=2`: libFuzzer's exit status for a crash.
        assert_eq!(result.status.code(), Some(77), "{name}: {stderr}");
        let total = summary(&out);
        assert_eq!(total["clients"], 2, "{name}: {total}");
        for index in [1, 2] {
            let client = client_summary(&out, index);
            assert!(
                client["elapsed_secs"].as_f64().unwrap() >= 2.0,
                "{name}: client {index} wrote its final summary: {client}"
            );
        }
        assert_eq!(
            total["crashes"].as_array().unwrap().len(),
            3,
            "{name}: {total}"
        );
    }
}
