//! The labelfuzz runtime: the engine and the harness as one static library with a C ABI, built
//! once per version of the sources, apart from any user's crates and flags.
//!
//! A Rust fuzz binary then holds two copies of `std` and friends: the user's and the runtime's.
//! So that they never meet, the runtime's static library is linked into one relocatable object
//! and every Rust symbol in it is made local ([`is_private_symbol`]); what stays global is its C
//! interface (`LLVMFuzzer*` callers, the SanitizerCoverage callbacks, the comparison
//! interceptors, `main`, `labelfuzz_rt_*`).

use std::path::{Path, PathBuf};
use std::process::Command;

use cargo_metadata::Message;
use object::{Object, ObjectSymbol};

use crate::{cache, sources, BuildError};

/// The file name of the runtime archive (`-l labelfuzz_rt`).
pub const ARCHIVE: &str = "liblabelfuzz_rt.a";
/// The file listing the system libraries the runtime needs (`-l` flags, one line).
pub const NATIVE_LIBS: &str = "native-libs.txt";

/// A built runtime: the directory holding [`ARCHIVE`] and [`NATIVE_LIBS`] (what
/// `LABELFUZZ_RUNTIME` names for `labelfuzz-sys`).
#[derive(Clone, Debug)]
pub struct Runtime {
    /// The directory.
    pub dir: PathBuf,
}

impl Runtime {
    /// The runtime of these sources, built now if the cache does not have it yet (a few minutes,
    /// once per machine and version; every later call returns at once).
    pub fn ensure() -> Result<Self, BuildError> {
        let versioned = cache::versioned()?;
        cache::note_use(&versioned)?;
        let dir = versioned.join("runtime");
        // One target directory for every version, under the same lock: a new version
        // recompiles the engine, not LibAFL.
        cache::build_once(&dir, "runtime.lock", || {
            eprintln!(
                "labelfuzz: building the labelfuzz runtime into {} (once per version; a few \
                 minutes)",
                dir.display()
            );
            let source_dir = versioned.join("engine");
            let _ = std::fs::remove_dir_all(&source_dir);
            sources::write_runtime_sources(&source_dir)?;
            let (archive, native_libs) = compile(&source_dir, &cache::root()?.join("target"))?;
            std::fs::create_dir_all(&dir).map_err(|e| BuildError::io("create", &dir, e))?;
            localize(&archive, &dir.join(ARCHIVE))?;
            cache::write_atomically(&dir.join(NATIVE_LIBS), native_libs.as_bytes())?;
            // A new version is in: the least recently used earlier ones go.
            let removed = cache::prune_other_versions(&cache::root()?, sources::KEY);
            if !removed.is_empty() {
                eprintln!(
                    "labelfuzz: removed {} earlier versions' runtimes from the cache (each is \
                     built again if a project still uses it)",
                    removed.len()
                );
            }
            Ok(())
        })?;
        Ok(Self { dir })
    }
}

/// Environment that would leak the user's build settings into the runtime's build.
const SCRUBBED_ENV: &[&str] = &[
    "RUSTFLAGS",
    "CARGO_ENCODED_RUSTFLAGS",
    "CARGO_BUILD_RUSTFLAGS",
    "RUSTC_WRAPPER",
    "RUSTC_WORKSPACE_WRAPPER",
    "CARGO_BUILD_RUSTC_WRAPPER",
    "CARGO_TARGET_DIR",
    "CARGO_BUILD_TARGET",
    "CARGO_BUILD_TARGET_DIR",
    "RUSTUP_TOOLCHAIN",
    "LABELFUZZ_MODE",
    "LABELFUZZ_INSTRUMENT",
    "LABELFUZZ_RUNTIME",
];

/// Compiles the harness as a static library; its path and the `-l` flags rustc says it needs.
fn compile(source_dir: &Path, target_dir: &Path) -> Result<(PathBuf, String), BuildError> {
    let mut command = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    command
        .current_dir(source_dir)
        .args(["rustc", "--release", "-p", "labelfuzz-harness", "--lib"])
        .args(["--crate-type", "staticlib"])
        .arg("--message-format=json-render-diagnostics")
        .arg("--target-dir")
        .arg(target_dir)
        .args(["--", "--print", "native-static-libs"]);
    for name in SCRUBBED_ENV {
        command.env_remove(name);
    }
    let mut archive = None;
    let mut native_libs = String::new();
    let status = crate::cargo_messages::stream(command, "building the runtime", |message| {
        match message {
            Message::CompilerArtifact(artifact) if artifact.target.name == "labelfuzz_harness" => {
                let file = artifact
                    .filenames
                    .iter()
                    .find(|f| f.extension() == Some("a"));
                archive = file.map(|f| f.clone().into_std_path_buf());
            }
            Message::CompilerMessage(message) => {
                if let Some(libs) = message.message.message.strip_prefix("native-static-libs: ") {
                    native_libs = libs.trim().to_string();
                    return true;
                }
            }
            _ => {}
        }
        false
    })?;
    match archive {
        Some(archive) if status.success() => Ok((archive, native_libs)),
        _ => Err(BuildError::tool(
            "building the labelfuzz runtime",
            format!("cargo exited with {status} (its messages are above)"),
        )),
    }
}

/// Whether a symbol the runtime defines must be hidden from the program it is linked into: Rust
/// symbols (legacy `_ZN…` and v0 `_R…` mangling, which the user's copy of `std` defines too) and
/// the unmangled symbols of Rust's runtime (allocator shims, panic entry points). Everything else
/// is the runtime's C interface.
#[must_use]
pub fn is_private_symbol(name: &str) -> bool {
    const RUST_RUNTIME_PREFIXES: &[&str] =
        &["_ZN", "_R", "__rust", "__rdl_", "__rg_", "rust_", "_rust_"];
    RUST_RUNTIME_PREFIXES
        .iter()
        .any(|prefix| name.starts_with(prefix))
}

/// Links `archive` into one object, makes its Rust symbols local, and archives it as `output`.
fn localize(archive: &Path, output: &Path) -> Result<(), BuildError> {
    let work = output.with_extension("work");
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).map_err(|e| BuildError::io("create", &work, e))?;
    let object_path = work.join("labelfuzz_rt.o");
    crate::error::run(
        Command::new(std::env::var_os("CC").unwrap_or_else(|| "cc".into()))
            .args(["-r", "-nostdlib", "-Wl,--whole-archive"])
            .arg(archive)
            .arg("-Wl,--no-whole-archive")
            .arg("-o")
            .arg(&object_path),
        "linking the runtime into one object (cc -r)",
    )?;
    let data = std::fs::read(&object_path).map_err(|e| BuildError::io("read", &object_path, e))?;
    let file = object::File::parse(&*data).map_err(|e| {
        BuildError::tool(
            "reading the runtime object",
            format!("{}: {e}", object_path.display()),
        )
    })?;
    let mut private: Vec<&str> = file
        .symbols()
        .filter(|s| !s.is_undefined() && (s.is_global() || s.is_weak()))
        .filter_map(|s| s.name().ok())
        .filter(|name| is_private_symbol(name))
        .collect();
    private.sort_unstable();
    private.dedup();
    let list = work.join("private-symbols.txt");
    std::fs::write(&list, private.join("\n")).map_err(|e| BuildError::io("write", &list, e))?;
    drop(file);
    let localized = work.join("labelfuzz_rt.local.o");
    crate::error::run(
        Command::new("objcopy")
            .arg("--strip-debug")
            // Embedded bitcode (for LTO of rlibs) is of no use in a finished object, and LLVM's
            // linker plugin, which binutils loads where clang is installed, rejects it.
            .args(["--remove-section=.llvmbc", "--remove-section=.llvmcmd"])
            .arg(format!("--localize-symbols={}", list.display()))
            .arg(&object_path)
            .arg(&localized),
        "making the runtime's Rust symbols local (objcopy)",
    )?;
    let partial = output.with_extension("partial");
    let _ = std::fs::remove_file(&partial);
    crate::error::run(
        Command::new("ar").arg("crs").arg(&partial).arg(&localized),
        "archiving the runtime (ar)",
    )?;
    std::fs::rename(&partial, output).map_err(|e| BuildError::io("rename", &partial, e))?;
    let _ = std::fs::remove_dir_all(&work);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rust_symbols_are_private_and_the_c_interface_is_not() {
        for private in [
            "_ZN3std2io5stdio6_print17h0123456789abcdefE",
            "_RNvCs1234_7mycrate3foo",
            "__rust_alloc",
            "__rust_no_alloc_shim_is_unstable",
            "__rdl_alloc",
            "__rg_oom",
            "rust_eh_personality",
            "rust_begin_unwind",
        ] {
            assert!(is_private_symbol(private), "{private}");
        }
        for public in [
            "main",
            "libafl_main",
            "labelfuzz_rt_panicked",
            "__sanitizer_cov_trace_pc_guard",
            "__sanitizer_cov_trace_cmp4",
            "memcmp",
            "LLVMFuzzerRunDriver",
            "__asan_default_options",
        ] {
            assert!(!is_private_symbol(public), "{public}");
        }
    }
}
