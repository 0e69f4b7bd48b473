# labelfuzz's compilers for scripts/native.sh (sourced there): labelfuzz-cc/labelfuzz-cxx and
# the harness, one cargo build in the shared target directory.
(cd "$ROOT" && cargo build --release -j2 -q -p labelfuzz-compiler-wrapper -p labelfuzz-harness) >&2
BIN="$(cd "$ROOT" && realpath -m "${CARGO_TARGET_DIR:-target}")/release"
export CC="$BIN/labelfuzz-cc"
export CXX="$BIN/labelfuzz-cxx"
CONFIGURE_CC="$CC"
INSTRUMENT=""
FUZZER_LINK=""
# A build with the compiler's condition folding kept (the benchmark's ablation of
# labelfuzz-cc's split conditions) lives apart from the standard one.
COMPILER_VARIANT="${LABELFUZZ_FOLDED_CONDITIONS:+folded}"
BUILD="$ROOT/target/native${LABELFUZZ_FOLDED_CONDITIONS:+-folded}/$NATIVE_TARGET"
