/* A recursive-descent calculator with one bug: division by zero (SIGFPE in term). Parentheses
 * nest, so the faulting division is reached through any number of expr < factor < term frames.
 * One bug must be one crash label however deep it is reached; its minimal reproducer is "0/0".
 *
 *   expr   = term {("+" | "-") term}
 *   term   = factor {("*" | "/") factor}
 *   factor = digit | "(" expr ")" | "-" factor
 */
#include <stddef.h>
#include <stdint.h>

struct cursor {
  const uint8_t *at, *end;
};

static int expr(struct cursor *c);

static int peek(const struct cursor *c) { return c->at < c->end ? *c->at : -1; }

__attribute__((noinline)) static int factor(struct cursor *c) {
  int next = peek(c);
  if (next >= '0' && next <= '9') {
    c->at++;
    return next - '0';
  }
  if (next == '-') {
    c->at++;
    return -factor(c);
  }
  if (next == '(') {
    c->at++;
    int value = expr(c);
    if (peek(c) == ')') c->at++;
    return value;
  }
  return 1;
}

__attribute__((noinline)) static int term(struct cursor *c) {
  int value = factor(c);
  for (;;) {
    int op = peek(c);
    if (op != '*' && op != '/') return value;
    c->at++;
    int rhs = factor(c);
    value = op == '*' ? value * rhs : value / rhs; /* the planted bug: rhs may be 0 */
  }
}

__attribute__((noinline)) static int expr(struct cursor *c) {
  int value = term(c);
  for (;;) {
    int op = peek(c);
    if (op != '+' && op != '-') return value;
    c->at++;
    int rhs = term(c);
    value = op == '+' ? value + rhs : value - rhs;
  }
}

volatile int calc_result;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct cursor c = {data, data + size};
  calc_result = expr(&c);
  return 0;
}
