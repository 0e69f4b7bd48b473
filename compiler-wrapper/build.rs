//! Builds the weak no-op SanitizerCoverage callbacks linked into instrumented programs that are
//! not fuzzers (configure probes, a library's own tools), so ordinary builds keep linking; and
//! the LLVM pass plugin that keeps folded conditions apart (`src/unfold_conditions.cc`, loaded
//! by clang-19, so built against LLVM 19's headers), which the wrapper embeds.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The LLVM major version the plugin is built for: the clang the wrapper drives.
const LLVM_MAJOR: u32 = 19;

fn main() {
    println!("cargo:rerun-if-changed=src/sancov_stubs.c");
    cc::Build::new()
        .file("src/sancov_stubs.c")
        // Not linked into the wrapper itself: the wrapper passes the archive to clang.
        .cargo_metadata(false)
        .compile("labelfuzz_sancov_stubs");
    build_unfold_plugin();
}

/// Where `llvm-config` for LLVM 19 is: `$LABELFUZZ_LLVM_BIN` (as the wrapper looks for clang),
/// Debian's directory, or `llvm-config-19` on the `PATH`.
fn llvm_config() -> Option<PathBuf> {
    println!("cargo:rerun-if-env-changed=LABELFUZZ_LLVM_BIN");
    if let Some(dir) = env::var_os("LABELFUZZ_LLVM_BIN") {
        let config = Path::new(&dir).join("llvm-config");
        return config.is_file().then_some(config);
    }
    let debian = PathBuf::from(format!("/usr/lib/llvm-{LLVM_MAJOR}/bin/llvm-config"));
    if debian.is_file() {
        return Some(debian);
    }
    let path = env::var_os("PATH")?;
    env::split_paths(&path)
        .map(|dir| dir.join(format!("llvm-config-{LLVM_MAJOR}")))
        .find(|config| config.is_file())
}

fn llvm_config_output(config: &Path, flag: &str) -> Option<String> {
    let out = Command::new(config).arg(flag).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Compiles the plugin into `$OUT_DIR/unfold_conditions.so`. Without LLVM 19's development
/// files the file is left empty and the wrapper goes without the plugin (the `-mllvm` folding
/// thresholds still apply): a warning says so, since the wrapper's own build must not need
/// more than the clang it drives.
fn build_unfold_plugin() {
    println!("cargo:rerun-if-changed=src/unfold_conditions.cc");
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let plugin = out.join("unfold_conditions.so");
    let built = llvm_config().and_then(|config| {
        let cxxflags = llvm_config_output(&config, "--cxxflags")?;
        let ldflags = llvm_config_output(&config, "--ldflags")?;
        let bindir = llvm_config_output(&config, "--bindir")?;
        let status = Command::new(Path::new(&bindir).join("clang++"))
            .args(cxxflags.split_whitespace())
            .args(["-fPIC", "-shared", "-O2", "-o"])
            .arg(&plugin)
            .arg("src/unfold_conditions.cc")
            .args(ldflags.split_whitespace())
            .status()
            .ok()?;
        status.success().then_some(())
    });
    if built.is_none() {
        println!(
            "cargo:warning=the LLVM {LLVM_MAJOR} pass plugin that keeps folded loop conditions \
             apart was not built (llvm-config-{LLVM_MAJOR} and LLVM's headers are in the \
             llvm-{LLVM_MAJOR}-dev package: scripts/bootstrap.sh installs it); labelfuzz-cc \
             works without it"
        );
        std::fs::write(&plugin, b"").expect("OUT_DIR is writable");
    }
}
