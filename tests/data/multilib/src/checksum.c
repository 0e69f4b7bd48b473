#include "multilib.h"

uint32_t multilib_checksum(const uint8_t *data, size_t size) {
  uint32_t sum = 0;
  for (size_t i = 0; i < size; i++) sum = sum * 31u + data[i];
  return sum;
}
