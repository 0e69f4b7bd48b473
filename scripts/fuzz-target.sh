#!/usr/bin/env bash
# Builds and runs a fuzz target: FUZZ_TARGET (crate dir, default the bundled fuzzers/planted)
# with FUZZ_ARGS (default: 30 seconds, output in out/<crate name>).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
target="${FUZZ_TARGET:-$root/fuzzers/planted}"
exe="$("$root/scripts/build-fuzzer.sh" "$target")"
name="$(basename "$exe")"
args="${FUZZ_ARGS:---max-time 30 -o out/$name}"
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
