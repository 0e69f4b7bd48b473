//! Compiles the C parts of the runtime — the comparison interceptors (`src/cmp_interceptors.c`),
//! SanitizerCoverage's comparison callbacks (`src/sancov_cmp.c`) and the mining recorder
//! (`src/mine_trace.c`) — and says where the sources are, for labelfuzz-build's build script
//! (DEP_LABELFUZZ_RUNTIME_SOURCE), which embeds them to build the runtime anywhere.

fn main() {
    let source = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
    println!("cargo:source={source}");
    // By absolute path: a build directory shared with another checkout (CI's clean clone)
    // must not keep handing out that checkout's path once it is gone.
    println!("cargo:rerun-if-changed={source}/Cargo.toml");

    // The comparison interceptors go into every fuzzer whole: nothing refers to them by name,
    // they replace libc's routines by being linked into the executable.
    println!("cargo:rerun-if-changed=src/cmp_interceptors.c");
    println!("cargo:rerun-if-changed=src/sancov_cmp.c");
    println!("cargo:rerun-if-changed=src/mine_trace.c");
    cc::Build::new()
        .file("src/cmp_interceptors.c")
        .file("src/sancov_cmp.c")
        .file("src/mine_trace.c")
        .flag("-fno-omit-frame-pointer")
        .flag("-Wno-frame-address")
        .opt_level(3)
        .flag("-fno-builtin")
        .link_lib_modifier("+whole-archive")
        .compile("labelfuzz_cmp_interceptors");
}
