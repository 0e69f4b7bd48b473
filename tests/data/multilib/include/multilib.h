/* A small library in several translation units, built the ordinary way with $(CC). */
#include <stddef.h>
#include <stdint.h>

uint32_t multilib_checksum(const uint8_t *data, size_t size);
int multilib_is_keyword(const uint8_t *data, size_t size);
int multilib_parse(const uint8_t *data, size_t size);
