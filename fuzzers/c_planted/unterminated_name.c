// A name read up to its terminator or to the end of the input, the way gzip's header parser
// reads one (libdeflate's gzip_decompress.c): `while (*p++ != 0 && p != end)`. LLVM's loop
// canonicalization folds the loop's two exits into one branch whatever the folding thresholds
// say, so the two ways out are one edge unless labelfuzz-cc's pass plugin splits them again
// (compiler-wrapper/src/unfold_conditions.cc). Where the name ended is stored, so the loop stays.
#include <stddef.h>
#include <stdint.h>

volatile size_t name_end;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2 || data[0] != 'N')
    return 0;
  const uint8_t *p = data + 1, *end = data + size;
  while (*p++ != 0 && p != end)
    ;
  name_end = (size_t)(p - data);
  return 0;
}
