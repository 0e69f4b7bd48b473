// A record that ends in a checksum of the rest (Adler-32, big-endian, as a zlib stream ends),
// and past the check a word the target compares one letter at a time. Input-to-state writes
// the checksum into an entry, but every mutant that then changes a letter changes what the
// checksum is computed from, fails the check and shows nothing new; the word is found only if
// each such mutant gets its checksum repaired (`--cmplog-repair`).
#include "checksum_record.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!record_checks_out(data, size)) return 0;
  size_t body = size - 4;
  if (body >= 4 && data[0] == 'G') {
    if (data[1] == 'A') {
      if (data[2] == 'T') {
        if (data[3] == 'E') __builtin_trap();  // the planted bug: "GATE" and its checksum
      }
    }
  }
  return 0;
}
