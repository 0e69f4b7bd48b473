//! Small helpers shared by the benchmark's modules.

use std::path::{Path, PathBuf};

use serde_json::Value;

/// The repository's root directory.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("repository root")
}

/// A lock on `target/bench/build.lock`, held until dropped. Benches started at once (one a
/// core, as the README suggests, or a soak beside another section) share `target/`, and the
/// build scripts are not safe to run twice at the same time: AFL++'s install, above all, builds
/// in one fixed directory, and two links of one fuzzer would write the same file. Every build
/// function takes it; taken again by the process that holds it (a target's five builds), it
/// only counts.
pub struct BuildLock(());

/// The lock file this process holds, and how many guards share it.
static HELD: std::sync::Mutex<(Option<std::fs::File>, usize)> = std::sync::Mutex::new((None, 0));

impl BuildLock {
    /// Takes the lock, waiting (and saying so) while another bench holds it.
    pub fn acquire() -> BuildLock {
        let mut held = HELD.lock().unwrap_or_else(|e| e.into_inner());
        held.1 += 1;
        if held.0.is_some() {
            return BuildLock(());
        }
        let path = root().join("target/bench/build.lock");
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).expect("target/bench");
        }
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                eprintln!("bench: another bench is building; waiting for it to finish");
                file.lock()
                    .unwrap_or_else(|e| panic!("locking {}: {e}", path.display()));
            }
            Err(std::fs::TryLockError::Error(e)) => panic!("locking {}: {e}", path.display()),
        }
        held.0 = Some(file);
        BuildLock(())
    }
}

impl Drop for BuildLock {
    fn drop(&mut self) {
        let mut held = HELD.lock().unwrap_or_else(|e| e.into_inner());
        held.1 -= 1;
        if held.1 == 0 {
            // Closing the file releases the lock.
            held.0 = None;
        }
    }
}

/// The machine's processor, as `/proc/cpuinfo` names it (empty if it does not).
pub fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find_map(|l| l.strip_prefix("model name"))
                .map(|l| l.trim_start_matches([' ', '\t', ':']).to_string())
        })
        .unwrap_or_default()
}

/// A whole number of seconds (or any count) from the environment, or `default`.
pub fn env_secs(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Panics with `what` if a build or run step failed: the benchmark cannot go on without it.
pub fn check(status: std::process::ExitStatus, what: &str) {
    assert!(status.success(), "{what} failed: {status}");
}

/// The host's target triple, as rustc reports it.
pub fn host_triple() -> String {
    let out = std::process::Command::new("rustc")
        .arg("-vV")
        .output()
        .expect("rustc runs");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: "))
        .expect("rustc -vV names the host")
        .to_string()
}

/// Removes and recreates a directory.
pub fn fresh_dir(path: &Path) -> PathBuf {
    let _ = std::fs::remove_dir_all(path);
    std::fs::create_dir_all(path).expect("bench directory");
    path.to_path_buf()
}

/// Reads a JSON file, or `Null` if it is missing or does not parse.
pub fn read_json(path: &Path) -> Value {
    std::fs::read(path)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(Value::Null)
}

/// The regular files directly in a directory (a corpus), sorted by name; hidden files (a
/// fuzzer's temporary files, AFL++'s `.state`) are not inputs.
pub fn files_in(dir: &Path) -> Vec<PathBuf> {
    entries_in(dir, |e| {
        e.file_type().is_ok_and(|t| t.is_file())
            && !e.file_name().to_string_lossy().starts_with('.')
    })
}

/// The directories in `dir` (none if it cannot be read), sorted.
pub fn dirs_in(dir: &Path) -> Vec<PathBuf> {
    entries_in(dir, |e| e.file_type().is_ok_and(|t| t.is_dir()))
}

/// The paths of the entries in `dir` that `keep` accepts (none if it cannot be read), sorted.
fn entries_in(dir: &Path, keep: impl Fn(&std::fs::DirEntry) -> bool) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| keep(e))
        .map(|e| e.path())
        .collect();
    paths.sort();
    paths
}

/// Median of a non-empty list (the lower middle for an even count).
pub fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted
        .get((sorted.len().saturating_sub(1)) / 2)
        .copied()
        .unwrap_or(0.0)
}

/// Busy and total jiffies of one core so far, from `/proc/stat`.
fn core_jiffies(cpu: usize) -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let name = format!("cpu{cpu}");
    let fields: Vec<u64> = stat
        .lines()
        .map(str::split_whitespace)
        .find_map(|mut fields| (fields.next() == Some(name.as_str())).then_some(fields))?
        .filter_map(|f| f.parse().ok())
        .collect();
    let total: u64 = fields.iter().take(8).sum();
    // idle and iowait are the fourth and fifth fields.
    let idle = fields.get(3).copied().unwrap_or(0) + fields.get(4).copied().unwrap_or(0);
    Some((total - idle, total))
}

/// The share of `cpu` that other processes used over the last `over`.
pub fn core_busy(cpu: usize, over: std::time::Duration) -> f64 {
    let Some((busy_before, total_before)) = core_jiffies(cpu) else {
        return 0.0;
    };
    std::thread::sleep(over);
    let Some((busy_after, total_after)) = core_jiffies(cpu) else {
        return 0.0;
    };
    let total = total_after.saturating_sub(total_before);
    if total == 0 {
        return 0.0;
    }
    busy_after.saturating_sub(busy_before) as f64 / total as f64
}

/// Waits up to `patience` for `cpu` to be idle (under a fifth busy over two seconds), so that
/// a fuzzer never shares its core with a leftover process; false if it never was.
pub fn wait_for_idle_core(cpu: usize, patience: std::time::Duration) -> bool {
    let started = std::time::Instant::now();
    loop {
        let busy = core_busy(cpu, std::time::Duration::from_secs(2));
        if busy < 0.2 {
            return true;
        }
        if started.elapsed() >= patience {
            return false;
        }
        eprintln!(
            "bench: core {cpu} is {:.0} % busy with another process: waiting before the run",
            busy * 100.0
        );
        std::thread::sleep(std::time::Duration::from_secs(10));
    }
}

/// Kills every process still working in `run_dir` (its command line names it, or its working
/// directory is inside it): what a fuzzer left behind when it was stopped, such as a restarted
/// child or AFL++'s fork server, would otherwise take time from the next run on its core.
pub fn kill_leftovers(run_dir: &Path) {
    let me = std::process::id();
    let needle = run_dir.to_string_lossy().into_owned();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|name| name.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == me {
            continue;
        }
        let proc_dir = entry.path();
        let cmdline = std::fs::read(proc_dir.join("cmdline")).unwrap_or_default();
        let names_it = String::from_utf8_lossy(&cmdline).contains(&needle);
        let works_in_it =
            std::fs::read_link(proc_dir.join("cwd")).is_ok_and(|cwd| cwd.starts_with(run_dir));
        if names_it || works_in_it {
            if let Ok(pid) = i32::try_from(pid) {
                // SAFETY: kill(2) on a process this benchmark started for the run.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;

    #[test]
    fn a_core_is_read_from_proc_stat() {
        let (busy, total) = core_jiffies(0).expect("cpu0 in /proc/stat");
        assert!(busy <= total && total > 0);
        assert!(core_jiffies(usize::MAX).is_none());
    }

    #[test]
    fn a_process_left_in_a_run_directory_is_killed() {
        let dir = std::env::temp_dir().join(format!("bench-leftovers-{}", std::process::id()));
        fresh_dir(&dir);
        let mut left = std::process::Command::new("sleep")
            .arg("60")
            .current_dir(&dir)
            .spawn()
            .expect("sleep starts");
        let mut elsewhere = std::process::Command::new("sleep")
            .arg("60")
            .spawn()
            .expect("sleep starts");
        kill_leftovers(&dir);
        let status = left.wait().expect("wait");
        assert_eq!(status.signal(), Some(libc::SIGKILL));
        assert!(
            elsewhere.try_wait().expect("try_wait").is_none(),
            "only the run's processes"
        );
        let _ = elsewhere.kill();
        let _ = elsewhere.wait();
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_second_bench_cannot_build_while_the_first_holds_the_lock() {
        let first = BuildLock::acquire();
        // Taken again by the same process (a target's builds each take it): no deadlock.
        let nested = BuildLock::acquire();
        let second =
            std::fs::File::open(root().join("target/bench/build.lock")).expect("lock file");
        drop(nested);
        assert!(matches!(
            second.try_lock_shared(),
            Err(std::fs::TryLockError::WouldBlock)
        ));
        drop(first);
        // Another test of this binary may be spawning a process at this moment: between its
        // fork and exec the child shares the first descriptor, so the lock outlives the drop
        // by that instant. Wait for it, briefly.
        let free = (0..200).any(|_| {
            second.try_lock().is_ok() || {
                std::thread::sleep(std::time::Duration::from_millis(5));
                false
            }
        });
        assert!(free, "free once the first is dropped");
    }
}
