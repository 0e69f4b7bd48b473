#!/usr/bin/env bash
# SQLite from the amalgamation the libsqlite3-sys package ships, compiled with labelfuzz-cc,
# plus our SQL-text harness. Prints the fuzzer's path.
NATIVE_TARGET=sqlite
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/native.sh"
sqlite="$(registry_source libsqlite3-sys)/sqlite3"
log "SQLite sources: $sqlite"
# Options as for fuzzing SQLite upstream: no threads, no extensions from disk, bounded memory.
flags="-O1 -I$sqlite -DSQLITE_THREADSAFE=0 -DSQLITE_OMIT_LOAD_EXTENSION -DSQLITE_DEFAULT_MEMSTATUS=1 \
  -DSQLITE_MAX_MEMORY=67108864 -DSQLITE_ENABLE_MATH_FUNCTIONS \
  -DSQLITE_ENABLE_JSON1 -DSQLITE_ENABLE_FTS5 -DSQLITE_ENABLE_RTREE"
log "compiling sqlite3.c (about a minute, once)"
compile_archive libsqlite3.a "$flags" "$sqlite/sqlite3.c"
link_fuzzer "$BUILD/sqlite_fuzzer" $FUZZER_LINK -O1 -I"$sqlite" "$ROOT/fuzzers/sqlite/fuzz_sql.c" "$BUILD/libsqlite3.a" -lm
echo "$BUILD/sqlite_fuzzer"
