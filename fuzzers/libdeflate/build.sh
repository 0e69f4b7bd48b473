#!/usr/bin/env bash
# libdeflate from the sources the libdeflate-sys package ships, with the gzip-decompression
# harness libdeflate ships for libFuzzer (scripts/libFuzzer/gzip_decompress/fuzz.c). Prints the
# fuzzer's path.
NATIVE_TARGET=libdeflate
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/native.sh"
deflate="$(registry_source libdeflate-sys)/libdeflate"
log "libdeflate sources: $deflate"
compile_archive libdeflate.a "-O2 -I$deflate" "$deflate"/lib/*.c "$deflate"/lib/x86/*.c
link_fuzzer "$BUILD/libdeflate_fuzzer" $FUZZER_LINK -O2 -I"$deflate" "$deflate/scripts/libFuzzer/gzip_decompress/fuzz.c" \
  "$BUILD/libdeflate.a"
echo "$BUILD/libdeflate_fuzzer"
