//! Helpers for end-to-end tests: build instrumented fuzzers and run them.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;

/// Root of the repository.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Fuzz builds share one target directory; build them one at a time.
static BUILD_LOCK: Mutex<()> = Mutex::new(());

/// Runs `command` to completion; panics with `what` and its stderr if it fails.
pub fn checked(command: &mut Command, what: &str) -> Output {
    let out = command
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot start: {e}"));
    assert!(
        out.status.success(),
        "{what} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Builds the fuzz target crate at `fuzzers/<name>` with instrumentation and the runtime
/// (through `labelfuzz-build`, as `cargo labelfuzz build` does); returns its binary.
pub fn build_fuzzer(name: &str) -> PathBuf {
    build_fuzzer_as(name, labelfuzz_build::Mode::Fuzz)
}

/// Builds `fuzzers/<name>` as `mode` asks (the fuzz build, or the source-coverage build).
pub fn build_fuzzer_as(name: &str, mode: labelfuzz_build::Mode) -> PathBuf {
    let _guard = BUILD_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let options = labelfuzz_build::BuildOptions {
        mode,
        target_root: Some(root().join("target/fuzz")),
        ..labelfuzz_build::BuildOptions::default()
    };
    let manifest = root().join("fuzzers").join(name).join("Cargo.toml");
    match labelfuzz_build::build(&manifest, &options) {
        Ok(mut built) => built.pop().expect("a fuzz crate builds a binary").path,
        Err(e) => panic!("building {name}: {e}"),
    }
}

/// A fresh, empty scratch directory for one test; see [`Scratch`].
pub fn scratch(name: &str) -> Scratch {
    let dir = root().join("target/test-scratch").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch directory");
    Scratch(dir)
}

/// A test's scratch directory, removed when the test passes and kept when it fails (to look
/// at). The suite builds dozens of instrumented binaries and checkouts into these; kept all
/// together they came to gigabytes, and a CI machine with a smaller disk ran out of space.
pub struct Scratch(PathBuf);

impl std::ops::Deref for Scratch {
    type Target = PathBuf;

    fn deref(&self) -> &PathBuf {
        &self.0
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<std::ffi::OsStr> for Scratch {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.0.as_os_str()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// Runs `fuzzer` with `args`, quietly.
pub fn run(fuzzer: &Path, args: &[&str]) -> Output {
    Command::new(fuzzer)
        .args(args)
        .arg("-q")
        .output()
        .expect("the fuzzer starts")
}

/// Reads `summary.json` from an output directory.
pub fn summary(out: &Path) -> serde_json::Value {
    let text = std::fs::read(out.join("summary.json")).expect("summary.json exists");
    serde_json::from_slice(&text).expect("summary.json parses")
}

/// Where cargo puts this workspace's builds: `CARGO_TARGET_DIR` when set (relative to the
/// workspace), else `target/`.
fn cargo_target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| root().join("target"), |dir| root().join(dir))
}

/// Builds `labelfuzz-cc`, `labelfuzz-cxx` and the harness (release, the shared target
/// directory) once; returns the directory holding them.
pub fn compiler_wrapper_dir() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let _guard = BUILD_LOCK.lock().unwrap_or_else(|e| e.into_inner());
            checked(
                Command::new(env!("CARGO"))
                    .current_dir(root())
                    .args(["build", "--release", "-j2"])
                    .args(["-p", "labelfuzz-compiler-wrapper"])
                    .args(["-p", "labelfuzz-harness"]),
                "building the compiler wrapper",
            );
            cargo_target_dir().join("release")
        })
        .clone()
}

/// Runs `labelfuzz-cc` with `args` in `dir`; panics with clang's messages if it fails.
pub fn labelfuzz_cc(dir: &Path, args: &[&str]) {
    let cc = compiler_wrapper_dir().join("labelfuzz-cc");
    checked(
        Command::new(&cc).current_dir(dir).args(args),
        &format!("labelfuzz-cc {args:?}"),
    );
}

/// The crash records of a run: reproducer bytes → (kind, location).
pub fn crashes_by_input(out: &Path) -> std::collections::BTreeMap<Vec<u8>, (String, String)> {
    let summary = summary(out);
    summary["crashes"]
        .as_array()
        .expect("crashes")
        .iter()
        .map(|crash| {
            let input = std::fs::read(out.join(crash["input"].as_str().expect("input")))
                .expect("the reproducer file exists");
            (
                input,
                (
                    crash["kind"].as_str().expect("kind").to_string(),
                    crash["location"].as_str().expect("location").to_string(),
                ),
            )
        })
        .collect()
}

/// A fuzzer started in its own process group, so that a test can signal or kill all of its
/// processes (supervisors, clients, broker) at once.
pub struct Group {
    child: std::process::Child,
    /// stdout and stderr go to files, so that a chatty run never blocks on a full pipe.
    logs: [PathBuf; 2],
}

impl Group {
    /// Starts `fuzzer` with `args` (quietly, stderr kept).
    pub fn start(fuzzer: &Path, args: &[&str]) -> Group {
        use std::os::unix::process::CommandExt;
        static STARTED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = STARTED.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let dir = root().join("target/test-scratch/logs");
        std::fs::create_dir_all(&dir).expect("log directory");
        let logs =
            ["stdout", "stderr"].map(|name| dir.join(format!("{}-{n}.{name}", std::process::id())));
        let file = |path: &PathBuf| std::fs::File::create(path).expect("log file");
        let child = Command::new(fuzzer)
            .args(args)
            .arg("-q")
            .stdout(file(&logs[0]))
            .stderr(file(&logs[1]))
            .process_group(0)
            .spawn()
            .expect("the fuzzer starts");
        Group { child, logs }
    }

    /// The launching process's id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends `signal` to every process of the group.
    pub fn signal(&self, signal: i32) {
        let group = i32::try_from(self.child.id()).expect("pid fits");
        // SAFETY: kill(2) on the process group of our own child.
        unsafe { libc::kill(-group, signal) };
    }

    /// Sends `signal` to the launching process alone.
    pub fn signal_leader(&self, signal: i32) {
        let pid = i32::try_from(self.child.id()).expect("pid fits");
        // SAFETY: kill(2) on our own child.
        unsafe { libc::kill(pid, signal) };
    }

    /// What the run's processes wrote to stderr so far.
    pub fn stderr_so_far(&self) -> String {
        String::from_utf8_lossy(&std::fs::read(&self.logs[1]).unwrap_or_default()).into_owned()
    }

    /// Waits for the launching process to end; kills the whole group and fails the test if it
    /// takes longer than `limit`, so that a hung run never hangs the test suite.
    pub fn wait(mut self, limit: std::time::Duration) -> Output {
        let started = std::time::Instant::now();
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                break status;
            }
            if started.elapsed() > limit {
                self.signal(libc::SIGKILL);
                let _ = self.child.wait();
                panic!(
                    "the fuzzer ran past {limit:?}; killed. stderr:\n{}",
                    String::from_utf8_lossy(&std::fs::read(&self.logs[1]).unwrap_or_default())
                );
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        };
        // Nothing may outlive the run: supervisors, clients and the broker all end with it.
        let group = i32::try_from(self.child.id()).expect("pid fits");
        let ended = std::time::Instant::now();
        while live_members(group) > 0 {
            if ended.elapsed() > std::time::Duration::from_secs(10) {
                self.signal(libc::SIGKILL);
                panic!("processes of the run were still alive 10 s after it ended");
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let [stdout, stderr] = self
            .logs
            .clone()
            .map(|path| std::fs::read(path).expect("log"));
        Output {
            status,
            stdout,
            stderr,
        }
    }
}

impl Drop for Group {
    /// A test that fails before waiting must not leave its run behind.
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            self.signal(libc::SIGKILL);
            let _ = self.child.wait();
        }
    }
}

/// Waits until something listens on `port` of this machine (at most a minute).
pub fn wait_for_listener(port: u16) {
    let started = std::time::Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(60),
            "nothing listens on port {port}"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// Runs `fuzzer` with `args` like [`run`], killing it (and failing) after `limit`.
pub fn run_bounded(fuzzer: &Path, args: &[&str], limit: std::time::Duration) -> Output {
    Group::start(fuzzer, args).wait(limit)
}

/// A TCP port nothing listens on now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// How many processes of process group `group` are alive (zombies waiting for a reaper
/// excluded).
pub fn live_members(group: i32) -> usize {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    entries
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .filter(|stat| {
            // After the command name in parentheses: state, ppid, pgrp.
            let Some((_, rest)) = stat.rsplit_once(") ") else {
                return false;
            };
            let fields: Vec<&str> = rest.split_whitespace().collect();
            fields.len() > 2 && fields[0] != "Z" && fields[2] == group.to_string()
        })
        .count()
}

/// Runs `fuzzer` with `args` like [`run_bounded`], checks that it exits with `code` and printed
/// no panic, and returns its stderr.
pub fn run_expecting(
    fuzzer: &Path,
    args: &[&str],
    limit: std::time::Duration,
    code: i32,
) -> String {
    let result = run_bounded(fuzzer, args, limit);
    let stderr = String::from_utf8_lossy(&result.stderr).into_owned();
    assert_eq!(result.status.code(), Some(code), "{args:?}: {stderr}");
    // A target's panic, reported in libFuzzer's shape, is `thread '<unnamed>' panicked at`; any
    // other is the fuzzer's own.
    let fuzzer_panics = stderr
        .lines()
        .filter(|l| l.contains("panicked") && !l.starts_with("thread '<unnamed>' panicked at "))
        .count();
    assert_eq!(fuzzer_panics, 0, "{args:?}: {stderr}");
    stderr
}

/// A small tmpfs that tests can fill or make read-only; unmounted when dropped. None where
/// mounting is not allowed (not root).
pub struct Tmpfs(pub std::path::PathBuf);

impl Tmpfs {
    pub fn mount(dir: &std::path::Path, options: &str) -> Option<Tmpfs> {
        std::fs::create_dir_all(dir).unwrap();
        let mounted = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", options, "tmpfs"])
            .arg(dir)
            .status()
            .is_ok_and(|s| s.success());
        // SAFETY: geteuid has no preconditions.
        let root = unsafe { libc::geteuid() } == 0;
        assert!(
            mounted || !root,
            "root could not mount a tmpfs on {}",
            dir.display()
        );
        if !mounted {
            eprintln!("not root: no tmpfs, so this test checks nothing here");
        }
        mounted.then(|| Tmpfs(dir.to_path_buf()))
    }

    pub fn remount(&self, options: &str) {
        let status = std::process::Command::new("mount")
            .args(["-o", &format!("remount,{options}")])
            .arg(&self.0)
            .status()
            .expect("mount runs");
        assert!(status.success(), "remount {options}");
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.0)
            .status();
    }
}
