#!/usr/bin/env bash
# Builds a labelfuzz fuzz target crate with SanitizerCoverage and prints the fuzzer's path.
#   scripts/build-fuzzer.sh DIR   (DIR: any crate whose main.rs uses labelfuzz::fuzz_target!)
# Fuzz builds share one target directory, target/fuzz, apart from ordinary builds: the
# instrumenting RUSTC_WRAPPER changes every crate's fingerprint.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
crate="${1:?usage: build-fuzzer.sh CRATE_DIR}"
if [ ! -f "$crate/Cargo.toml" ]; then
  echo "build-fuzzer: $crate has no Cargo.toml" >&2; exit 2
fi
export RUSTC_WRAPPER="$root/scripts/rustc-sancov"
# Cargo does not fingerprint the wrapper's flags: a cfg naming the wrapper's version does, so a
# change to the instrumentation rebuilds every crate once.
wrapper_version="$(cksum < "$RUSTC_WRAPPER" | cut -d' ' -f1)"
export RUSTFLAGS="${RUSTFLAGS:-} --cfg labelfuzz_sancov_$wrapper_version"
# Which crates the wrapper instruments is not part of cargo's fingerprint: each choice gets its
# own target directory so that no stale (un)instrumented artifact is reused.
suffix=""
if [ -n "${LABELFUZZ_INSTRUMENT:-}" ]; then suffix="-$(printf '%s' "$LABELFUZZ_INSTRUMENT" | tr -c 'A-Za-z0-9_' '_')"; fi
export CARGO_TARGET_DIR="${LABELFUZZ_TARGET_DIR:-$root/target/fuzz$suffix}"
json="$(cd "$crate" && cargo build --release -j2 --message-format=json-render-diagnostics)"
exe="$(printf '%s\n' "$json" | grep '"executable":"' | grep -v '"executable":null' \
  | sed -e 's/.*"executable":"\([^"]*\)".*/\1/' | tail -n 1)"
if [ -z "$exe" ]; then
  echo "build-fuzzer: $crate built no binary (is it a binary crate using labelfuzz::fuzz_target!?)" >&2
  exit 2
fi
echo "$exe"
