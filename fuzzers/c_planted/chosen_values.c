// Values chosen by a condition, with no branch to show which way it went: clang emits a
// `?:` between two plain values as a select, and a MIN() becomes LLVM's umin intrinsic.
// SanitizerCoverage instruments branches only, so an input that picks the other value shows
// no edge of its own unless labelfuzz-cc's pass plugin (compiler-wrapper/src/unfold_conditions.cc)
// turns each choice into a branch first. The chosen values are stored, so the choices stay.
#include <stddef.h>
#include <stdint.h>

#define MIN(a, b) ((a) < (b) ? (a) : (b))

volatile size_t chosen_length, chosen_offset;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 3 || data[0] != 'V')
    return 0;
  chosen_offset = data[1] == 'X' ? 3 : 10;
  chosen_length = MIN(size, (size_t)data[2]);
  return 0;
}
