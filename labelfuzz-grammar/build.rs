//! Says where the sources are, for labelfuzz-build's build script (DEP_LABELFUZZ_GRAMMAR_SOURCE),
//! which embeds them to build the runtime anywhere.

fn main() {
    println!(
        "cargo:source={}",
        std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default()
    );
}
