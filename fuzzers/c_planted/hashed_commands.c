/* A command interpreter that looks its commands up by hash, as SQLite looks up its keywords:
 * no branch and no comparison shows a fuzzer that an input is getting closer to a command's
 * name (the hash is compared whole, and its operands are not the input's bytes). The names are
 * string literals of the program, so the automatic dictionary has them.
 *   "drop-everything"    -> SIGILL in run_command
 */
#include <stddef.h>
#include <stdint.h>

static const char *const volatile commands[] = {"status", "rebuild-index", "drop-everything"};
enum { COMMANDS = sizeof commands / sizeof commands[0] };

static uint32_t fnv1a(const uint8_t *bytes, size_t size) {
  uint32_t hash = 2166136261u;
  for (size_t i = 0; i < size; i++) hash = (hash ^ bytes[i]) * 16777619u;
  return hash;
}

static size_t length(const char *text) {
  size_t n = 0;
  while (text[n] != '\0') n++;
  return n;
}

__attribute__((noinline)) static void run_command(size_t which) {
  if (which == 2) __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  uint32_t hash = fnv1a(data, size);
  for (size_t i = 0; i < COMMANDS; i++) {
    if (hash == fnv1a((const uint8_t *)commands[i], length(commands[i]))) run_command(i);
  }
  return 0;
}
