#!/usr/bin/env bash
# Little CMS from the sources the lcms2-sys package ships, compiled file by file with
# labelfuzz-cc, plus our ICC-profile harness. Prints the fuzzer's path; seed profiles go to
# target/native/lcms/seeds.
NATIVE_TARGET=lcms
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/native.sh"
lcms="$(registry_source lcms2-sys)/vendor"
log "Little CMS sources: $lcms"
compile_archive liblcms2.a "-O1 -I$lcms/include" "$lcms"/src/*.c
link_fuzzer "$BUILD/lcms_fuzzer" $FUZZER_LINK -O1 -I"$lcms/include" "$ROOT/fuzzers/lcms/fuzz_transform.c" "$BUILD/liblcms2.a" -lm
# Seeds: profiles Little CMS writes itself (an ordinary program, linked without the harness).
if [ -n "$FUZZER_LINK" ]; then echo "$BUILD/lcms_fuzzer"; exit 0; fi  # baseline: seeds come from the labelfuzz build
"$CC" -O1 -I"$lcms/include" "$ROOT/fuzzers/lcms/make_seeds.c" "$BUILD/liblcms2.a" -lm -o "$BUILD/make_seeds"
mkdir -p "$BUILD/seeds"
"$BUILD/make_seeds" "$BUILD/seeds"
echo "$BUILD/lcms_fuzzer"
