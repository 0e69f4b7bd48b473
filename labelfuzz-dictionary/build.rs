//! Says where the sources are, for labelfuzz-build's build script (DEP_LABELFUZZ_DICTIONARY_SOURCE),
//! which embeds them to build the runtime anywhere.

fn main() {
    let source = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
    println!("cargo:source={source}");
    // By absolute path: a build directory shared with another checkout (CI's clean clone)
    // must not keep handing out that checkout's path once it is gone.
    println!("cargo:rerun-if-changed={source}/Cargo.toml");
}
