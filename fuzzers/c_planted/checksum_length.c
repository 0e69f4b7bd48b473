// A record that ends in an Adler-32 of the rest, as `checksum_gate.c`, whose body has to grow:
// each length reached past the check is a new branch, and the bug is a body of 12 bytes. With
// havoc off, the expansions lengthen a record, and every expansion changes what its checksum
// is computed from; the crash's shrink removes bytes the checksum covers, so its reproducer is
// minimal only when the gates watched while expanding are kept with the crash
// (`--cmplog-repair`).
#include "checksum_record.h"

// Keeps each length's branch apart from the others.
static volatile size_t longest;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!record_checks_out(data, size)) return 0;
  size_t body = size - 4;
  if (body >= 3) longest = 3;
  if (body >= 5) longest = 5;
  if (body >= 7) longest = 7;
  if (body >= 9) longest = 9;
  if (body >= 11) longest = 11;
  if (body >= 12) __builtin_trap();  // the planted bug: 12 bytes and their checksum
  return 0;
}
