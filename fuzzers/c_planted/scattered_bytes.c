// Four single bytes checked at fixed places of a 256-byte record, each behind the last. The
// shortest record is all zeros, so a compared zero occurs at every place: input-to-state
// replacement has to write each byte where the target read it (on a colorized copy of the
// record, `--cmplog-colorize`, the compared byte's value occurs at few places).
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 256) return 0;
  if (data[200] != 0x7f) return 0;
  if (data[17] != 0x31) return 0;
  if (data[90] != 0xc4) return 0;
  if (data[250] != 0x08) return 0;
  __builtin_trap();  // the planted bug
}
