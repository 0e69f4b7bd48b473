//! `cargo install` from packaged crates: the tool builds the runtime from the sources it carries
//! and fuzzes projects laid out as real ones are, with no labelfuzz source tree anywhere.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{assert_git_clean, checked, project, repo};

const PACKAGES: [&str; 10] = [
    "labelfuzz-core",
    "labelfuzz-dictionary",
    "labelfuzz-grammar",
    "labelfuzz-runtime",
    "labelfuzz-tools",
    "labelfuzz",
    "labelfuzz-harness",
    "labelfuzz-sys",
    "labelfuzz-build",
    "cargo-labelfuzz",
];

/// Packages the crates, unpacks them, installs cargo-labelfuzz from the unpacked package into
/// `root`, then removes every package and unpacked tree. Returns the installed tool.
fn install_from_packages(scratch: &Path, root: &Path) -> PathBuf {
    let packaged = scratch.join("package-target");
    let mut package = Command::new(env!("CARGO"));
    package
        .current_dir(repo())
        .args(["package", "--no-verify", "--allow-dirty", "-q"])
        .arg("--target-dir")
        .arg(&packaged);
    for name in PACKAGES {
        package.args(["-p", name]);
    }
    checked(&mut package, "cargo package");
    let unpacked = scratch.join("unpacked");
    std::fs::create_dir_all(&unpacked).unwrap();
    for name in PACKAGES {
        let crate_file = packaged.join("package").join(format!("{name}-0.1.0.crate"));
        checked(
            Command::new("tar")
                .arg("xzf")
                .arg(&crate_file)
                .current_dir(&unpacked),
            "unpacking a package",
        );
    }
    let mut install = Command::new(env!("CARGO"));
    install
        .current_dir(scratch)
        .args(["install", "-q", "-j2", "--path"])
        .arg(unpacked.join("cargo-labelfuzz-0.1.0"))
        .arg("--root")
        .arg(root)
        // Kept between runs (the engine is compiled once), apart from the workspace's builds.
        .arg("--target-dir")
        .arg(repo().join("target/install-test/target"))
        .env_remove("CARGO_TARGET_DIR");
    // The packages' dependencies on each other name crates.io versions: point them at the
    // unpacked packages, as a registry would serve them.
    for name in PACKAGES.iter().filter(|n| **n != "cargo-labelfuzz") {
        install.arg("--config").arg(format!(
            "patch.crates-io.{name}.path={:?}",
            unpacked.join(format!("{name}-0.1.0")).display().to_string()
        ));
    }
    checked(&mut install, "cargo install from the unpacked package");
    std::fs::remove_dir_all(&unpacked).unwrap();
    std::fs::remove_dir_all(&packaged).unwrap();
    root.join("bin/cargo-labelfuzz")
}

/// `cargo labelfuzz ARGS` in `dir` with the installed tool, its cache at `cache`.
fn run(tool: &Path, dir: &Path, cache: &Path, args: &[&str]) -> Output {
    let output = Command::new(tool)
        .arg("labelfuzz")
        .args(args)
        .current_dir(dir)
        .env("LABELFUZZ_CACHE", cache)
        .env_remove("LABELFUZZ_HOME")
        .output()
        .expect("the installed tool starts");
    eprintln!(
        "cargo labelfuzz {args:?} in {}: {}\n{}",
        dir.display(),
        output.status,
        String::from_utf8_lossy(&output.stderr)
            .lines()
            .filter(|l| !l.contains("Compiling") && !l.starts_with('#') && !l.starts_with("DEBUG"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    output
}

fn artifacts(dir: &Path, target: &str) -> Vec<Vec<u8>> {
    let mut found: Vec<Vec<u8>> = std::fs::read_dir(dir.join("fuzz/artifacts").join(target))
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter(|e| e.file_name().to_string_lossy().starts_with("crash-"))
                .map(|e| std::fs::read(e.path()).unwrap())
                .collect()
        })
        .unwrap_or_default();
    found.sort();
    found
}

#[test]
fn an_installed_tool_fuzzes_real_project_layouts_with_no_source_tree() {
    // Outside the repository: an unpacked package there would be taken for a member of its
    // workspace (and users install from anywhere).
    let scratch =
        std::env::temp_dir().join(format!("labelfuzz-install-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch).unwrap();
    let tool = install_from_packages(&scratch, &scratch.join("root"));
    // A cache of its own: the runtime is built from the sources inside the tool.
    let cache = repo().join("target/install-test/cache");

    // 1. The fuzz crate is a member of the parent's workspace, whose committed Cargo.lock pins
    //    crates.io's libfuzzer-sys 0.4 (and old versions of crates the engine uses).
    let member = scratch.join("workspace-member");
    project("pinned-project", &member, |_| {});
    let lock = std::fs::read(member.join("Cargo.lock")).unwrap();
    let found = run(
        &tool,
        &member,
        &cache,
        &["run", "demangle", "--", "-runs=300000", "-seed=1"],
    );
    assert_eq!(
        found.status.code(),
        Some(77),
        "rustc-demangle 0.1.5's bug is found"
    );
    assert!(!artifacts(&member, "demangle").is_empty());
    assert_eq!(std::fs::read(member.join("Cargo.lock")).unwrap(), lock);
    assert_git_clean(&member);

    // 2. A fuzz crate with its own [workspace] and committed lock file, in a project whose
    //    rust-toolchain.toml asks for nightly.
    let own = scratch.join("own-workspace");
    project("cargo-fuzz-project", &own, |dir| {
        std::fs::write(
            dir.join("rust-toolchain.toml"),
            "[toolchain]\nchannel = \"nightly\"\n",
        )
        .unwrap();
        checked(
            Command::new("cargo")
                .arg("generate-lockfile")
                .current_dir(dir.join("fuzz")),
            "generating fuzz/Cargo.lock",
        );
    });
    let lock = std::fs::read(own.join("fuzz/Cargo.lock")).unwrap();
    assert!(String::from_utf8_lossy(&lock).contains("name = \"libfuzzer-sys\""));
    let found = run(
        &tool,
        &own,
        &cache,
        &[
            "run",
            "parse",
            "--",
            "-runs=2000000",
            "-max_total_time=240",
            "-seed=1",
        ],
    );
    assert_eq!(found.status.code(), Some(77));
    assert_eq!(artifacts(&own, "parse"), vec![b"p9+".to_vec()]);
    assert_eq!(std::fs::read(own.join("fuzz/Cargo.lock")).unwrap(), lock);
    assert_git_clean(&own);
    let _ = std::fs::remove_dir_all(&scratch);
}
