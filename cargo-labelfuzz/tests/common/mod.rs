//! Helpers shared by cargo-labelfuzz's end-to-end tests: projects as committed git checkouts.

#![allow(dead_code)] // each test binary uses its own subset

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The labelfuzz repository.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Runs `command`; panics with `what` and its stderr if it fails.
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

/// Runs git in `dir` (quietly, with a fixed identity); its stdout.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = checked(
        Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(["-c", "init.defaultBranch=main"])
            .args(args)
            .current_dir(dir),
        &format!("git {args:?}"),
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A fresh copy of `tests/data/<project>` at `dir`, changed by `prepare`, then committed to a
/// new git repository, as a real project's checkout is.
pub fn project(project: &str, dir: &Path, prepare: impl FnOnce(&Path)) {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).expect("scratch directory");
    checked(
        Command::new("cp")
            .arg("-r")
            .arg(repo().join("tests/data").join(project).join("."))
            .arg(dir),
        "copying the project",
    );
    prepare(dir);
    git(dir, &["init", "-q"]);
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-qm", "project as checked out"]);
}

/// `git status` shows nothing: labelfuzz left only what the project's ignore rules cover.
pub fn assert_git_clean(dir: &Path) {
    let status = git(dir, &["status", "--porcelain", "--untracked-files=all"]);
    assert!(
        status.is_empty(),
        "files left behind in {}:\n{status}",
        dir.display()
    );
}
