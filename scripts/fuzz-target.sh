#!/usr/bin/env bash
# Builds and runs a fuzz target.
#   scripts/fuzz-target.sh [TARGET=<name>] [FUZZ_ARGS="<fuzzer flags>"]
# TARGET names a directory of fuzzers/: a Rust crate (planted, the default; json; faults; empty),
# a native C target with a build.sh (zlib, libpng, sqlite, lcms, lz4, xz, libdeflate), or a grammar target: a
# directory with grammar.json and a file `target` naming the fuzzer it drives (sql). FUZZ_TARGET=<dir> runs a
# Rust fuzz crate anywhere. FUZZ_ARGS defaults to 30 seconds with output in out/<name>, plus the
# target's seeds if it has any. Settings may come from the environment or as NAME=VALUE args.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
for setting in "$@"; do
  case "$setting" in
    TARGET=*|FUZZ_TARGET=*|FUZZ_ARGS=*) export "${setting?}" ;;
    *) echo "fuzz-target: unknown argument '$setting' (expected TARGET=<name> or FUZZ_ARGS=<flags>)" >&2; exit 2 ;;
  esac
done

available() {
  local names=()
  for dir in "$root"/fuzzers/*/; do
    if [ -f "$dir/build.sh" ] || [ -f "$dir/Cargo.toml" ] || [ -f "$dir/target" ]; then names+=("$(basename "$dir")"); fi
  done
  echo "${names[*]}"
}

if [ -n "${FUZZ_TARGET:-}" ]; then
  dir="$FUZZ_TARGET"
else
  dir="$root/fuzzers/${TARGET:-planted}"
  grammar=""
  if [ -f "$dir/grammar.json" ] && [ -f "$dir/target" ]; then
    grammar="--grammar $dir/grammar.json"
    dir="$root/fuzzers/$(cat "$dir/target")"
  fi
  if [ ! -f "$dir/build.sh" ] && [ ! -f "$dir/Cargo.toml" ]; then
    echo "fuzz-target: no target '${TARGET:-}' (available: $(available))" >&2
    exit 2
  fi
fi

seeds=""
if [ -f "$dir/build.sh" ]; then
  exe="$(bash "$dir/build.sh")"
  # Seeds are byte inputs: a grammar run starts from the empty choice sequence instead.
  if [ -d "$(dirname "$exe")/seeds" ] && [ -z "${grammar:-}" ]; then seeds="$(dirname "$exe")/seeds"; fi
else
  exe="$("$root/scripts/build-fuzzer.sh" "$dir")"
fi
name="${TARGET:-$(basename "$dir")}"
args="${FUZZ_ARGS:---max-time 30 -o out/$name $seeds} ${grammar:-}"
echo "fuzz-target: $exe $args" >&2
set +e
# shellcheck disable=SC2086  # FUZZ_ARGS is a list of arguments
"$exe" $args
status=$?
set -e
case $status in
  0) echo "fuzz-target: no crash found" >&2 ;;
  1) echo "fuzz-target: crashes found: see the crashes/ directory and summary.json in the output directory" >&2 ;;
  *) exit $status ;;
esac
