#!/usr/bin/env bash
# liblzma (XZ Utils) from the sources the liblzma-sys package ships, configured by the
# config.h that package ships, with XZ's own OSS-Fuzz harness for .xz streams
# (tests/ossfuzz/fuzz_decode_stream.c). Prints the fuzzer's path.
NATIVE_TARGET=xz
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/native.sh"
package="$(registry_source liblzma-sys)"
xz="$package/xz"
log "liblzma sources: $xz"
includes="-I$package"
for dir in api lzma lz check simple delta common rangecoder; do includes="$includes -I$xz/src/liblzma/$dir"; done
includes="$includes -I$xz/src/common"
# As liblzma-sys builds it (single-threaded, no table-less CRCs; the table generators are
# programs of their own), plus the fuzzing mode XZ's
# OSS-Fuzz build uses (header CRCs are not checked, so the decoder gets past them).
sources=()
for dir in common lzma lz check delta rangecoder simple; do
  for src in "$xz/src/liblzma/$dir"/*.c; do
    case "$(basename "$src" .c)" in *mt|*_tablegen|crc32_small|crc64_small|crc_clmul_consts_gen) continue ;; esac
    sources+=("$src")
  done
done
sources+=("$xz/src/common/tuklib_cpucores.c" "$xz/src/common/tuklib_physmem.c")
flags="-O2 -std=c99 -DHAVE_CONFIG_H=1 -DNDEBUG -DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION $includes"
compile_archive liblzma.a "$flags" "${sources[@]}"
link_fuzzer "$BUILD/xz_fuzzer" $FUZZER_LINK -O2 $includes -I"$xz/tests/ossfuzz" "$xz/tests/ossfuzz/fuzz_decode_stream.c" \
  "$BUILD/liblzma.a"
echo "$BUILD/xz_fuzzer"
