// Four 'C' bytes in a row trap. At -O1 the counter is a select, not a branch: no edge and no
// hit count changes on the way from `C` to `CCC`, only how often `d[i] == 'C'` comes out equal
// and how close `run` comes to 4 (comparison progress labels, `--cmp-progress`); without
// them, havoc's runs of one byte value still find it, a few times later.
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  unsigned run = 0;
  for (size_t i = 0; i < size; i++) {
    run = data[i] == 'C' ? run + 1 : 0;
    if (run == 4) __builtin_trap();  // the planted bug
  }
  return 0;
}
