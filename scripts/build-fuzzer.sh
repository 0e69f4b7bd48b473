#!/usr/bin/env bash
# Builds a Rust fuzz crate (one that depends on labelfuzz-sys, or a cargo-fuzz crate) with
# instrumentation and the labelfuzz runtime, and prints the fuzzer's path. A thin caller of
# `cargo labelfuzz build` (labelfuzz-build does the work):
#   scripts/build-fuzzer.sh DIR        LABELFUZZ_COVERAGE=1: the source-based coverage build
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
crate="${1:?usage: build-fuzzer.sh CRATE_DIR}"
coverage=()
if [ -n "${LABELFUZZ_COVERAGE:-}" ]; then coverage=(--coverage); fi
cargo run -q -j2 --manifest-path "$root/Cargo.toml" -p cargo-labelfuzz -- \
  labelfuzz build --fuzz-dir "$crate" --target-dir "$root/target/fuzz" "${coverage[@]}" | tail -n 1
