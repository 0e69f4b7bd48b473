#!/usr/bin/env bash
# zlib from the sources the libz-sys package ships, compiled file by file with labelfuzz-cc,
# plus our uncompress harness. Prints the fuzzer's path.
NATIVE_TARGET=zlib
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/native.sh"
zlib="$(registry_source libz-sys)/src/zlib"
log "zlib sources: $zlib"
compile_archive libz.a "-O2 -I$zlib -DHAVE_UNISTD_H -DHAVE_STDARG_H" "$zlib"/*.c
link_fuzzer "$BUILD/zlib_fuzzer" $FUZZER_LINK -O2 -I"$zlib" "$ROOT/fuzzers/zlib/fuzz_uncompress.c" "$BUILD/libz.a"
echo "$BUILD/zlib_fuzzer"
