/* The library's own command-line tool: an ordinary program with its own main. */
#include <stdio.h>
#include <string.h>

#include "multilib.h"

int main(int argc, char **argv) {
  const char *text = argc > 1 ? argv[1] : "";
  printf("multitool: %s -> %d\n", text, multilib_parse((const uint8_t *)text, strlen(text)));
  return 0;
}
