#!/usr/bin/env bash
# LZ4 from the sources the lz4-sys package ships, with the frame-decompression harness LZ4 ships
# for OSS-Fuzz (ossfuzz/decompress_frame_fuzzer.c). Prints the fuzzer's path.
NATIVE_TARGET=lz4
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/native.sh"
lz4="$(registry_source lz4-sys)/liblz4"
log "LZ4 sources: $lz4"
compile_archive liblz4.a "-O2 -I$lz4/lib" "$lz4"/lib/lz4.c "$lz4"/lib/lz4frame.c "$lz4"/lib/lz4hc.c "$lz4"/lib/xxhash.c
fuzz="$lz4/ossfuzz"
link_fuzzer "$BUILD/lz4_fuzzer" $FUZZER_LINK -O2 -I"$lz4/lib" -I"$fuzz" "$fuzz/decompress_frame_fuzzer.c" "$fuzz/fuzz_data_producer.c" \
  "$fuzz/lz4_helpers.c" "$BUILD/liblz4.a"
echo "$BUILD/lz4_fuzzer"
