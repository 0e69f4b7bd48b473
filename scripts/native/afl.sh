# AFL++'s compilers for scripts/native.sh (sourced there): afl-clang-fast
# (scripts/install-aflpp.sh) with its libFuzzer-compatible driver; afl-cmplog is the same with
# AFL_LLVM_CMPLOG=1, the binary afl-fuzz's -c runs.
AFLPP="$(bash "$ROOT/scripts/install-aflpp.sh")"
export AFL_PATH="$AFLPP" AFL_QUIET=1
export CC="$AFLPP/afl-clang-fast" CXX="$AFLPP/afl-clang-fast++"
[ "$NATIVE_BASELINE" = afl-cmplog ] && export AFL_LLVM_CMPLOG=1
CONFIGURE_CC="$CLANG"
INSTRUMENT=""
# afl-clang-fast links its libFuzzer-compatible driver (libAFLDriver.a) for this flag.
FUZZER_LINK="-fsanitize=fuzzer"
BUILD="$ROOT/target/native-$NATIVE_BASELINE/$NATIVE_TARGET"
