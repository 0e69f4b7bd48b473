/* The seed's arithmetic expressions, parsed by recursive descent: a subject for grammar mining
 * (`FUZZER mine`). Invalid input is rejected with libFuzzer's -1. Built with
 * -DNESTED_PARENS_BUG, a parenthesis nested three deep aborts (the planted bug the whole mining
 * path is tested on).
 *
 *   expr    = term {("+" | "-") term}
 *   term    = factor {("*" | "/") factor}
 *   factor  = ("+" | "-") factor | "(" expr ")" | integer ["." integer]
 *   integer = digit {digit}
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

struct cursor {
  const uint8_t *at, *end;
  int depth;
  int parens;
};

static int expr(struct cursor *c);

static int peek(const struct cursor *c) { return c->at < c->end ? *c->at : -1; }

static int integer(struct cursor *c) {
  int digits = 0;
  while (peek(c) >= '0' && peek(c) <= '9') {
    c->at++;
    digits++;
  }
  return digits > 0;
}

static int factor(struct cursor *c) {
  int next = peek(c);
  if (next == '+' || next == '-') {
    c->at++;
    return factor(c);
  }
  if (next == '(') {
    c->at++;
#ifdef NESTED_PARENS_BUG
    if (++c->parens == 3) abort();
#endif
    if (!expr(c) || peek(c) != ')') return 0;
    c->at++;
    c->parens--;
    return 1;
  }
  if (!integer(c)) return 0;
  if (peek(c) == '.') {
    c->at++;
    return integer(c);
  }
  return 1;
}

static int term(struct cursor *c) {
  if (!factor(c)) return 0;
  while (peek(c) == '*' || peek(c) == '/') {
    c->at++;
    if (!factor(c)) return 0;
  }
  return 1;
}

static int expr(struct cursor *c) {
  if (++c->depth > 64) return 0;
  int ok = term(c);
  while (ok && (peek(c) == '+' || peek(c) == '-')) {
    c->at++;
    ok = term(c);
  }
  c->depth--;
  return ok;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct cursor c = {data, data + size, 0, 0};
  if (!expr(&c) || c.at != c.end) return -1;
  return 0;
}
