//! Embeds the sources of the labelfuzz runtime (`labelfuzz-core`, `labelfuzz-dictionary`,
//! `labelfuzz-grammar`, `labelfuzz-runtime`, `labelfuzz-tools`, the `labelfuzz` engine and
//! `labelfuzz-harness`) and of `labelfuzz-sys`,
//! so that an installed tool builds the runtime with no checkout around.
//!
//! Each of those packages says where its sources are (`cargo:source=…` in its build script,
//! read here as `DEP_<links>_SOURCE`): the workspace when built from a checkout or a git URL,
//! the unpacked package when installed from a registry. Only what a build needs is taken: the
//! manifest, the build script, `src/`, and the workspace's `Cargo.lock` where there is one (it
//! pins the engine's own dependencies to the versions tested).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.filter_map(Result::ok).map(|e| e.path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            files_under(&path, out);
        } else {
            out.push(path);
        }
    }
}

/// FNV-1a: a stable hash of the embedded bytes, the cache key of the built runtime.
fn fnv1a(hash: &mut u64, bytes: &[u8]) {
    for byte in bytes {
        *hash ^= u64::from(*byte);
        *hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
}

fn main() {
    let packages = [
        ("labelfuzz-core", "DEP_LABELFUZZ_CORE_SOURCE"),
        ("labelfuzz-dictionary", "DEP_LABELFUZZ_DICTIONARY_SOURCE"),
        ("labelfuzz-grammar", "DEP_LABELFUZZ_GRAMMAR_SOURCE"),
        ("labelfuzz-runtime", "DEP_LABELFUZZ_RUNTIME_SOURCE"),
        ("labelfuzz-tools", "DEP_LABELFUZZ_TOOLS_SOURCE"),
        ("labelfuzz", "DEP_LABELFUZZ_SOURCE"),
        ("labelfuzz-harness", "DEP_LABELFUZZ_HARNESS_SOURCE"),
        ("labelfuzz-sys", "DEP_LABELFUZZ_SYS_SOURCE"),
    ];
    let mut table = String::from("/// Embedded sources: (path under the cache's source directory, contents).\npub const SOURCES: &[(&str, &[u8])] = &[\n");
    let mut hash = 0xcbf2_9ce4_8422_2325_u64;
    for (name, var) in packages {
        let dir = PathBuf::from(
            std::env::var(var)
                .unwrap_or_else(|_| panic!("{var} is not set: is {name} a dependency?")),
        );
        let mut files = vec![dir.join("Cargo.toml")];
        if dir.join("build.rs").is_file() {
            files.push(dir.join("build.rs"));
        }
        if name == "labelfuzz" && dir.join("Cargo.lock").is_file() {
            files.push(dir.join("Cargo.lock"));
        }
        files_under(&dir.join("src"), &mut files);
        println!("cargo:rerun-if-changed={}", dir.join("src").display());
        for file in files {
            println!("cargo:rerun-if-changed={}", file.display());
            let relative = file.strip_prefix(&dir).expect("under the package");
            let key = format!("{name}/{}", relative.display());
            let bytes = std::fs::read(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            fnv1a(&mut hash, key.as_bytes());
            fnv1a(&mut hash, &bytes);
            writeln!(
                table,
                "    ({key:?}, include_bytes!({:?})),",
                file.display().to_string()
            )
            .unwrap();
        }
    }
    table.push_str("];\n");
    // What the cache builds from this crate's own files (the rustc wrapper, the glue crates)
    // belongs to the key too: a changed wrapper must not be found already built.
    let manifest_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("manifest dir"));
    for own in ["src/wrapper.rs", "src/glue.rs"] {
        let file = manifest_dir.join(own);
        println!("cargo:rerun-if-changed={}", file.display());
        let bytes = std::fs::read(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        fnv1a(&mut hash, own.as_bytes());
        fnv1a(&mut hash, &bytes);
    }
    let version = std::env::var("CARGO_PKG_VERSION").unwrap_or_default();
    writeln!(
        table,
        "/// The cache key of these sources: the version and a hash of every embedded byte.\npub const KEY: &str = \"{version}-{hash:016x}\";"
    )
    .unwrap();
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    std::fs::write(out.join("sources.rs"), table).expect("write sources.rs");
}
