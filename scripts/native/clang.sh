# Plain clang-19 for scripts/native.sh (sourced there): the libFuzzer anchor
# (-fsanitize=fuzzer) and the benchmark's yardstick, source-based coverage linked with
# bench/coverage/replay_main.c.
[ -x "$CLANG" ] || { log "clang-19 is missing: run scripts/bootstrap.sh"; exit 2; }
export CC="$CLANG" CXX="$CLANG++"
CONFIGURE_CC="$CLANG"
# Every build of a target defines the macro fuzzing builds define (labelfuzz-cc and
# afl-clang-fast do, as OSS-Fuzz's flags do; clang's -fsanitize=fuzzer does not): code
# under it skips magic numbers and checksums, and a corpus found without them only
# measures the same on a build that skips them too.
unsafe_mode="-DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION=1"
if [ "$NATIVE_BASELINE" = libfuzzer ]; then
  INSTRUMENT="-fsanitize=fuzzer-no-link $unsafe_mode"
  FUZZER_LINK="-fsanitize=fuzzer $unsafe_mode"
else
  INSTRUMENT="-fprofile-instr-generate -fcoverage-mapping $unsafe_mode"
  FUZZER_LINK="-fprofile-instr-generate $unsafe_mode $ROOT/bench/coverage/replay_main.c"
fi
BUILD="$ROOT/target/native-$NATIVE_BASELINE/$NATIVE_TARGET"
