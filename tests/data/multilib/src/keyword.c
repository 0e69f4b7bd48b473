#include <string.h>

#include "multilib.h"

int multilib_is_keyword(const uint8_t *data, size_t size) {
  return size >= 2 && data[0] == 'K' && (data[1] == 'w' || data[1] == 'W');
}
