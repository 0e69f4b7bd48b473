#include <stdlib.h>

#include "multilib.h"

/* Returns a small classification of the input; the planted bug: a keyword followed by '!'. */
int multilib_parse(const uint8_t *data, size_t size) {
  if (multilib_is_keyword(data, size)) {
    if (size > 2 && data[2] == '!') abort();
    return 2;
  }
  return multilib_checksum(data, size) % 2;
}
