#!/usr/bin/env bash
# Builds AFL++ (afl-fuzz, afl-clang-fast with CmpLog, libAFLDriver.a) for the benchmark's third
# fuzzer, from the AFL++ 4.40c sources that the crates.io package cargo-afl-common ships. Debian's
# afl++ 4.04c never runs the CmpLog binary (see docs/benchmark.md), so we do not use it.
# Prints the directory holding the tools; builds once into target/aflpp/.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEST="$ROOT/target/aflpp"
log() { echo "install-aflpp: $*" >&2; }

if [ -x "$DEST/afl-fuzz" ] && [ -x "$DEST/afl-clang-fast" ] && [ -f "$DEST/libAFLDriver.a" ]; then
  echo "$DEST"; exit 0
fi
LLVM_CONFIG="${LLVM_CONFIG:-llvm-config-19}"
command -v "$LLVM_CONFIG" >/dev/null || { log "$LLVM_CONFIG is missing: run scripts/bootstrap.sh"; exit 2; }

manifest="$ROOT/fuzzers/native/sources/Cargo.toml"
cargo fetch -q --manifest-path "$manifest" >&2
src="$(cargo metadata -q --format-version 1 --manifest-path "$manifest" \
  | tr ',' '\n' | grep '"manifest_path"' | grep '/cargo-afl-common-[0-9][^/]*/Cargo.toml' \
  | sed -e 's/.*"manifest_path":"\(.*\)\/Cargo.toml"/\1/' | head -n 1)/AFLplusplus"
[ -f "$src/GNUmakefile" ] || { log "AFL++ sources not found under $src"; exit 2; }

# The registry copy stays read-only: build in a copy.
rm -rf "$DEST.build"
cp -r "$src" "$DEST.build"
log "building AFL++ from $src (a few minutes, once)"
(
  cd "$DEST.build"
  export LLVM_CONFIG NO_PYTHON=1 NO_NYX=1 NO_SPLICING=1 AFL_NO_X86=1
  make -j"$(nproc)" afl-fuzz afl-showmap >&2
  make -j"$(nproc)" -f GNUmakefile.llvm >&2
  make -C utils/aflpp_driver libAFLDriver.a >&2
) || { log "the AFL++ build failed (see above)"; exit 2; }
for tool in afl-fuzz afl-clang-fast afl-clang-fast++ afl-compiler-rt.o libAFLDriver.a cmplog-routines-pass.so; do
  [ -e "$DEST.build/$tool" ] || { log "the AFL++ build did not produce $tool"; exit 2; }
done
rm -rf "$DEST"
mv "$DEST.build" "$DEST"
log "AFL++ ready in $DEST"
echo "$DEST"
