#!/usr/bin/env bash
# Builds a labelfuzz fuzz target crate with SanitizerCoverage and prints the fuzzer's path.
#   scripts/build-fuzzer.sh DIR   (DIR: any crate whose main.rs uses labelfuzz::fuzz_target!)
# Every crate compiled for the target is instrumented (scripts/rustc-sancov), as cargo-fuzz
# does, except the fuzzing engine: labelfuzz, LibAFL and the crates only they depend on.
# LABELFUZZ_INSTRUMENT=crate_a,crate_b narrows instrumentation to those crates and the local
# path crates. LABELFUZZ_COVERAGE=1 makes the source-based coverage build instead (for
# `FUZZER coverage OUT`). LABELFUZZ_BIN=NAME builds only that binary of the crate; LABELFUZZ_CARGO_CONFIG
# is one `--config` value for cargo (cargo labelfuzz patches libfuzzer-sys with it). Fuzz builds share target directories under target/ apart from ordinary builds:
# the instrumenting RUSTC_WRAPPER changes every crate's fingerprint.
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
# An explicit --target keeps build scripts, proc-macros and their dependencies (host code)
# apart from the target's crates: only the latter see RUSTFLAGS and get instrumented.
host="$(rustc -vV | sed -n 's/^host: //p')"

cargo_config=()
if [ -n "${LABELFUZZ_CARGO_CONFIG:-}" ]; then cargo_config=(--config "$LABELFUZZ_CARGO_CONFIG"); fi
bin=()
if [ -n "${LABELFUZZ_BIN:-}" ]; then bin=(--bin "$LABELFUZZ_BIN"); fi

# The engine's crates: labelfuzz's dependencies that the target does not use itself.
crate_list() { (cd "$crate" && cargo "${cargo_config[@]}" tree -q -e normal,no-proc-macro --prefix none -f '{lib}' "$@") | sort -u; }
if ! engine_all="$(crate_list -p labelfuzz)"; then
  echo "build-fuzzer: $crate does not depend on labelfuzz (cargo tree -p labelfuzz failed)" >&2
  exit 2
fi
user_all="$(crate_list --prune labelfuzz)"
LABELFUZZ_ENGINE_CRATES="$(comm -23 <(echo "$engine_all") <(echo "$user_all") | paste -sd, -)"
export LABELFUZZ_ENGINE_CRATES
# Which crates the wrapper instruments is not part of cargo's fingerprint: each choice (the
# engine crates the target shares, LABELFUZZ_INSTRUMENT) gets its own target directory so that
# no stale (un)instrumented artifact is reused.
shared="$(comm -12 <(echo "$engine_all") <(echo "$user_all") | paste -sd, -)"
suffix=""
if [ -n "$shared" ]; then suffix="-shared$(printf '%s' "$shared" | cksum | cut -d' ' -f1)"; fi
if [ -n "${LABELFUZZ_COVERAGE:-}" ]; then suffix="$suffix-coverage"; fi
if [ -n "${LABELFUZZ_INSTRUMENT:-}" ] && [ "$LABELFUZZ_INSTRUMENT" != all ]; then
  suffix="$suffix-$(printf '%s' "$LABELFUZZ_INSTRUMENT" | tr -c 'A-Za-z0-9_' '_')"
fi
export CARGO_TARGET_DIR="${LABELFUZZ_TARGET_DIR:-$root/target/fuzz$suffix}"
json="$(cd "$crate" && cargo "${cargo_config[@]}" build --release -j2 --target "$host" "${bin[@]}" --message-format=json-render-diagnostics)"
exe="$(printf '%s\n' "$json" | grep '"executable":"' | grep -v '"executable":null' \
  | sed -e 's/.*"executable":"\([^"]*\)".*/\1/' | tail -n 1)"
if [ -z "$exe" ]; then
  echo "build-fuzzer: $crate built no binary (is it a binary crate using labelfuzz::fuzz_target!?)" >&2
  exit 2
fi
echo "$exe"
