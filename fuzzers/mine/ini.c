/* A recursive-descent INI reader: a subject for grammar mining (`FUZZER mine`). Invalid input
 * is rejected with libFuzzer's -1.
 *
 *   file    = {line}
 *   line    = {" "} (section | pair | comment | "") "\n"
 *   section = "[" name "]"
 *   pair    = name {" "} "=" {" "} text
 *   comment = ";" text
 *   name    = namechar {namechar}          namechar: letter, digit, "_", "."
 *   text    = {printable character}
 */
#include <stddef.h>
#include <stdint.h>

struct cursor {
  const uint8_t *at, *end;
};

static int peek(const struct cursor *c) { return c->at < c->end ? *c->at : -1; }

static void spaces(struct cursor *c) {
  while (peek(c) == ' ') c->at++;
}

static int name(struct cursor *c) {
  int count = 0;
  for (;;) {
    int next = peek(c);
    int letter = (next >= 'a' && next <= 'z') || (next >= 'A' && next <= 'Z');
    int digit = next >= '0' && next <= '9';
    if (!letter && !digit && next != '_' && next != '.') return count > 0;
    c->at++;
    count++;
  }
}

static void text(struct cursor *c) {
  while (peek(c) >= 0x20 && peek(c) <= 0x7e) c->at++;
}

static int section(struct cursor *c) {
  c->at++; /* the '[' line() saw */
  if (!name(c) || peek(c) != ']') return 0;
  c->at++;
  return 1;
}

static int pair(struct cursor *c) {
  if (!name(c)) return 0;
  spaces(c);
  if (peek(c) != '=') return 0;
  c->at++;
  spaces(c);
  text(c);
  return 1;
}

static void comment(struct cursor *c) {
  c->at++; /* the ';' line() saw */
  text(c);
}

static int line(struct cursor *c) {
  spaces(c);
  int ok = 1;
  switch (peek(c)) {
    case '[': ok = section(c); break;
    case ';': comment(c); break;
    case '\n': break;
    default: ok = pair(c); break;
  }
  if (!ok || peek(c) != '\n') return 0;
  c->at++;
  return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct cursor c = {data, data + size};
  while (c.at < c.end) {
    if (!line(&c)) return -1;
  }
  return 0;
}
