#!/usr/bin/env bash
# Runs a project's OSS-Fuzz build script with labelfuzz as the fuzzing engine:
#   scripts/oss-fuzz-build.sh PROJECT_DIR OUT_DIR [BUILD_SCRIPT]
# BUILD_SCRIPT (default PROJECT_DIR/build.sh) runs in PROJECT_DIR with the environment OSS-Fuzz's
# builder gives it: CC/CXX (labelfuzz-cc/labelfuzz-cxx), CFLAGS/CXXFLAGS with
# -fsanitize=fuzzer-no-link, LIB_FUZZING_ENGINE=-fsanitize=fuzzer (-lFuzzingEngine works too),
# SRC (PROJECT_DIR's parent), OUT and WORK. The fuzzers it writes to OUT take labelfuzz's and
# libFuzzer's flags.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
project="${1:?usage: oss-fuzz-build.sh PROJECT_DIR OUT_DIR [BUILD_SCRIPT]}"
out="${2:?usage: oss-fuzz-build.sh PROJECT_DIR OUT_DIR [BUILD_SCRIPT]}"
project="$(cd "$project" && pwd)"
script="${3:-$project/build.sh}"
if [ ! -f "$script" ]; then
  echo "oss-fuzz-build: no build script $script" >&2; exit 2
fi
script="$(cd "$(dirname "$script")" && pwd)/$(basename "$script")"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
(cd "$root" && cargo build --release -j2 -q -p labelfuzz-compiler-wrapper -p labelfuzz-harness) >&2
# Where cargo put them: CARGO_TARGET_DIR (relative to the checkout) when set.
bin="$(cd "$root" && realpath -m "${CARGO_TARGET_DIR:-target}")/release"
export CC="$bin/labelfuzz-cc" CXX="$bin/labelfuzz-cxx"
flags="-O1 -fno-omit-frame-pointer -gline-tables-only -fsanitize=fuzzer-no-link -DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION"
export CFLAGS="$flags" CXXFLAGS="$flags"
export LIB_FUZZING_ENGINE="-fsanitize=fuzzer"
export SRC="$(dirname "$project")" OUT="$out" WORK="$out/.work"
export FUZZING_ENGINE=libfuzzer SANITIZER=none ARCHITECTURE=x86_64 FUZZING_LANGUAGE=c++
mkdir -p "$WORK"
cd "$project"
bash "$script"
