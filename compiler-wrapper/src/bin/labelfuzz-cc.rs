//! `labelfuzz-cc`: clang-19 as a C compiler for labelfuzz fuzzers (see the crate docs).

fn main() {
    std::process::exit(labelfuzz_compiler_wrapper::run(false));
}
