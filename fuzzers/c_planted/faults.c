/* Faults that are not a plain bad pointer. Each must become its own crash label with a minimal
 * reproducer, and the run must go on after each:
 *   "A!"  abort()                          -> SIGABRT
 *   "S!"  unbounded recursion              -> stack overflow (the handler runs on its own stack)
 *   "L!"  an endless loop                  -> timeout
 *   "M!"  memory grows without bound       -> oom under --rss-limit-mb
 *   "X!"  exit(0) in the middle of a run   -> exit
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int tagged(const uint8_t *data, size_t size, uint8_t tag) {
  return size >= 2 && data[0] == tag && data[1] == '!';
}

__attribute__((noinline)) static uint64_t recurse(volatile uint64_t depth) {
  volatile uint8_t frame[512];
  frame[depth % sizeof frame] = (uint8_t)depth;
  if (depth == UINT64_MAX) return frame[0];
  /* The addition after the call keeps it from becoming a loop. */
  return 1 + recurse(depth + 1) + frame[depth % sizeof frame];
}

/* Kept in a global: memory the program never looks at again may be optimised away. */
char *volatile hoard[64];

__attribute__((noinline)) static size_t hoard_memory(void) {
  size_t held = 0;
  for (int i = 0; i < 64; i++) {
    char *block = malloc(64 << 20);
    if (!block) break;
    memset(block, 1, 64 << 20); /* touch every page: resident, not just reserved */
    hoard[i] = block;
    held += 64 << 20;
  }
  return held;
}

__attribute__((noinline)) static void hang(void) {
  volatile int spin = 0;
  for (;;) spin++;
}

volatile uint64_t sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (tagged(data, size, 'A')) abort();
  if (tagged(data, size, 'S')) sink = recurse(0);
  if (tagged(data, size, 'L')) hang();
  if (tagged(data, size, 'M')) sink = hoard_memory();
  if (tagged(data, size, 'X')) exit(0);
  return 0;
}
