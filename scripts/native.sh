# Shared by the native targets' build scripts (fuzzers/<name>/build.sh): sourced, not run.
# Provides: ROOT, CC/CXX (labelfuzz-cc/labelfuzz-cxx, built on first use, or a baseline's
# compiler), CONFIGURE_CC, INSTRUMENT (compile flags), FUZZER_LINK (flags for the fuzzer's link), BUILD (a scratch directory for this target under target/native/),
# registry_source CRATE, which prints the directory of a registry package's sources (pinned in
# fuzzers/native/sources/Cargo.toml), and compile_archive.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
NATIVE_TARGET="${NATIVE_TARGET:?set NATIVE_TARGET before sourcing native.sh}"

log() { echo "build-$NATIVE_TARGET: $*" >&2; }

# NATIVE_BASELINE builds the same target for another fuzzer or for measuring, in
# target/native-<baseline>/ (the benchmark's baselines and yardstick):
#   libfuzzer   clang-19 -fsanitize=fuzzer;
#   afl         AFL++'s afl-clang-fast (scripts/install-aflpp.sh) with its libFuzzer driver;
#   afl-cmplog  the same with AFL_LLVM_CMPLOG=1, the binary afl-fuzz's -c runs;
#   coverage    clang-19 source-based coverage, linked with bench/coverage/replay_main.c.
# CONFIGURE_CC is the compiler a configure script probes with (it must link without a fuzzer
# runtime); the instrumentation flags go to make only.
CLANG=/usr/lib/llvm-19/bin/clang
# Every compiler's set-up is a file of its own in scripts/native/, setting CC, CXX,
# CONFIGURE_CC, INSTRUMENT, FUZZER_LINK, BUILD and COMPILER_VARIANT: the benchmark fingerprints
# each fuzzer's runs by the files that build them, so a change to one fuzzer's set-up re-runs
# that fuzzer only.
case "${NATIVE_BASELINE:-}" in
  "") compiler=labelfuzz ;;
  libfuzzer|coverage) compiler=clang ;;
  afl|afl-cmplog) compiler=afl ;;
  *) log "unknown NATIVE_BASELINE '$NATIVE_BASELINE' (libfuzzer, afl, afl-cmplog or coverage)"; exit 2 ;;
esac
COMPILER_VARIANT=""
source "$ROOT/scripts/native/$compiler.sh"
# Sources are compiled in parallel on every core; the fuzzer is what is slow to build, not us.
JOBS="$(nproc 2>/dev/null || echo 2)"

mkdir -p "$BUILD"

registry_source() {
  local crate="$1" manifest="$ROOT/fuzzers/native/sources/Cargo.toml" path
  cargo fetch -q --manifest-path "$manifest" >&2
  path="$(cargo metadata -q --format-version 1 --manifest-path "$manifest" \
    | tr ',' '\n' | grep '"manifest_path"' | grep "/$crate-[0-9][^/]*/Cargo.toml" \
    | sed -e 's/.*"manifest_path":"\(.*\)\/Cargo.toml"/\1/' | head -n 1)"
  if [ -z "$path" ] || [ ! -d "$path" ]; then
    echo "build-$NATIVE_TARGET: registry package $crate not found (is it in fuzzers/native/sources/Cargo.toml?)" >&2
    exit 2
  fi
  echo "$path"
}

# Identifies the compiler build (the wrapper's own binary changes when its flags do, and a
# variant, such as labelfuzz-cc with folded conditions, changes what it passes to clang).
compiler_version() {
  echo "$(cksum < "$CC" | cut -d' ' -f1) ${NATIVE_BASELINE:-labelfuzz} $COMPILER_VARIANT"
}

# Links a fuzzer: link_fuzzer OUTPUT ARGS... ($CC's arguments, inputs included). Skipped when
# OUTPUT is newer than every file among ARGS and was linked the same way by the same compiler
# and harness: the benchmark reuses finished runs only while their binaries stay the same.
link_fuzzer() {
  local out="$1"; shift
  local harness="" stamp lib
  lib="$(dirname "$CC")/liblabelfuzz_harness.a"
  if [ -f "$lib" ]; then harness="$(cksum < "$lib" | cut -d' ' -f1)"; fi
  stamp="$* $(compiler_version) $harness"
  if [ -x "$out" ] && [ "$(cat "$out.stamp" 2>/dev/null)" = "$stamp" ]; then
    local arg stale=0
    for arg in "$@"; do
      if [ -f "$arg" ] && [ "$arg" -nt "$out" ]; then stale=1; fi
    done
    [ "$stale" = 0 ] && return 0
  fi
  "$CC" "$@" -o "$out"
  printf '%s' "$stamp" > "$out.stamp"
}

# Compiles C sources to objects in $BUILD/obj (parallel) and archives them as $BUILD/$1.
# Usage: compile_archive libfoo.a "<cflags>" file.c...
compile_archive() {
  local archive="$1" cflags="$2"; shift 2
  mkdir -p "$BUILD/obj"
  # Objects are reused only if built by the same compiler with the same flags.
  local stamp="$cflags $INSTRUMENT $(compiler_version)"
  if [ "$(cat "$BUILD/obj/.stamp-$archive" 2>/dev/null)" != "$stamp" ]; then
    for src in "$@"; do rm -f "$BUILD/obj/$(basename "$src" .c).o"; done
    printf '%s' "$stamp" > "$BUILD/obj/.stamp-$archive"
  fi
  printf '%s\n' "$@" | xargs -P "$JOBS" -I{} sh -c \
    'src="$1"; obj="$2/obj/$(basename "$src" .c).o"; [ "$obj" -nt "$src" ] || exec "$3" '"$cflags $INSTRUMENT"' -c "$src" -o "$obj"' \
    sh {} "$BUILD" "$CC"
  local objs=() obj stale=0
  for src in "$@"; do objs+=("$BUILD/obj/$(basename "$src" .c).o"); done
  # Re-archived only when an object changed: a fresh archive would relink the fuzzer.
  [ -f "$BUILD/$archive" ] || stale=1
  for obj in "${objs[@]}"; do [ "$obj" -nt "$BUILD/$archive" ] && stale=1; done
  if [ "$stale" = 1 ] || [ "$(cat "$BUILD/obj/.members-$archive" 2>/dev/null)" != "${objs[*]}" ]; then
    rm -f "$BUILD/$archive"
    ar rcs "$BUILD/$archive" "${objs[@]}"
    printf '%s' "${objs[*]}" > "$BUILD/obj/.members-$archive"
  fi
}
