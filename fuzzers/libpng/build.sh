#!/usr/bin/env bash
# libpng from the sources the freetype-sys package ships, built by its own autotools build
# (./configure && make CC=labelfuzz-cc), over zlib from libz-sys, plus our decoding harness.
# Prints the fuzzer's path; seeds (libpng's own small test images) go to target/native/libpng/seeds.
NATIVE_TARGET=libpng
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/native.sh"
zlib="$(registry_source libz-sys)/src/zlib"
libpng_src="$(registry_source freetype-sys)/libpng"
log "zlib sources: $zlib; libpng sources: $libpng_src"
compile_archive libz.a "-O2 -I$zlib -DHAVE_UNISTD_H -DHAVE_STDARG_H" "$zlib"/*.c

if [ ! -f "$BUILD/libpng/.libs/libpng16.a" ] \
  || [ "$(cat "$BUILD/libpng.stamp" 2>/dev/null)" != "$(compiler_version)" ]; then
  rm -rf "$BUILD/libpng"
  cp -r "$libpng_src" "$BUILD/libpng"
  # Registry copies keep no timestamps from git: make must not try to rerun autotools.
  # configure's probe for zlib is answered: an instrumented libz.a only links with a fuzzer's
  # runtime, which the probe compiler (CONFIGURE_CC) may not have.
  (cd "$BUILD/libpng" && touch aclocal.m4 configure Makefile.in config.h.in)
  log "configure && make (log: $BUILD/build.log)"
  if ! (cd "$BUILD/libpng" \
    && ./configure --disable-shared --enable-static --disable-tools \
      ac_cv_lib_z_zlibVersion=yes CC="$CONFIGURE_CC" CPPFLAGS="-I$zlib" LDFLAGS="-L$BUILD" CFLAGS="-O1" \
    && make -j"$JOBS" CC="$CC" CFLAGS="-O1 $INSTRUMENT" libpng16.la) >"$BUILD/build.log" 2>&1; then
    tail -n 40 "$BUILD/build.log" >&2
    log "libpng's build failed (full log: $BUILD/build.log)"
    exit 1
  fi
  compiler_version > "$BUILD/libpng.stamp"
fi
link_fuzzer "$BUILD/libpng_fuzzer" $FUZZER_LINK -O1 -I"$BUILD/libpng" -I"$zlib" "$ROOT/fuzzers/libpng/fuzz_read.c" \
  "$BUILD/libpng/.libs/libpng16.a" "$BUILD/libz.a" -lm
# Seeds: the small test images libpng ships (PngSuite and its own test PNGs).
mkdir -p "$BUILD/seeds"
find "$libpng_src/contrib/pngsuite" "$libpng_src/contrib/testpngs" -name '*.png' -size -4k \
  -exec cp {} "$BUILD/seeds/" \;
echo "$BUILD/libpng_fuzzer"
