/* A recursive-descent JSON parser: a subject for grammar mining (`FUZZER mine`). Invalid input
 * is rejected with libFuzzer's -1.
 *
 *   document = value
 *   value    = ws (object | array | string | number | literal) ws
 *   object   = "{" ws "}" | "{" member {"," member} "}"
 *   member   = ws string ws ":" value
 *   array    = "[" ws "]" | "[" value {"," value} "]"
 *   string   = '"' {char | escape} '"'
 *   escape   = "\" ('"' | "\" | "/" | "b" | "f" | "n" | "r" | "t")
 *   number   = ["-"] digits ["." digits] [("e" | "E") ["+" | "-"] digits]
 *   literal  = "true" | "false" | "null"
 */
#include <stddef.h>
#include <stdint.h>

struct cursor {
  const uint8_t *at, *end;
  int depth;
};

static int value(struct cursor *c);

static int peek(const struct cursor *c) { return c->at < c->end ? *c->at : -1; }

static int expect(struct cursor *c, int byte) {
  if (peek(c) != byte) return 0;
  c->at++;
  return 1;
}

static void whitespace(struct cursor *c) {
  while (peek(c) == ' ' || peek(c) == '\t' || peek(c) == '\n' || peek(c) == '\r') c->at++;
}

static int escape(struct cursor *c) {
  if (!expect(c, '\\')) return 0;
  switch (peek(c)) {
    case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
      c->at++;
      return 1;
    default:
      return 0;
  }
}

static int string(struct cursor *c) {
  if (!expect(c, '"')) return 0;
  for (;;) {
    int next = peek(c);
    if (next < 0x20 || next > 0x7e) return 0;
    if (next == '"') {
      c->at++;
      return 1;
    }
    if (next == '\\') {
      if (!escape(c)) return 0;
    } else {
      c->at++;
    }
  }
}

static int digits(struct cursor *c) {
  int count = 0;
  while (peek(c) >= '0' && peek(c) <= '9') {
    c->at++;
    count++;
  }
  return count > 0;
}

static int number(struct cursor *c) {
  if (peek(c) == '-') c->at++;
  if (!digits(c)) return 0;
  if (peek(c) == '.') {
    c->at++;
    if (!digits(c)) return 0;
  }
  if (peek(c) == 'e' || peek(c) == 'E') {
    c->at++;
    if (peek(c) == '+' || peek(c) == '-') c->at++;
    if (!digits(c)) return 0;
  }
  return 1;
}

static int literal(struct cursor *c, const char *word) {
  for (; *word; word++) {
    if (peek(c) != *word) return 0;
    c->at++;
  }
  return 1;
}

static int member(struct cursor *c) {
  whitespace(c);
  if (!string(c)) return 0;
  whitespace(c);
  return expect(c, ':') && value(c);
}

static int object(struct cursor *c) {
  if (!expect(c, '{')) return 0;
  whitespace(c);
  if (expect(c, '}')) return 1;
  if (!member(c)) return 0;
  while (expect(c, ',')) {
    if (!member(c)) return 0;
  }
  return expect(c, '}');
}

static int array(struct cursor *c) {
  if (!expect(c, '[')) return 0;
  whitespace(c);
  if (expect(c, ']')) return 1;
  if (!value(c)) return 0;
  while (expect(c, ',')) {
    if (!value(c)) return 0;
  }
  return expect(c, ']');
}

static int value(struct cursor *c) {
  if (++c->depth > 32) return 0;
  whitespace(c);
  int ok;
  switch (peek(c)) {
    case '{': ok = object(c); break;
    case '[': ok = array(c); break;
    case '"': ok = string(c); break;
    case 't': ok = literal(c, "true"); break;
    case 'f': ok = literal(c, "false"); break;
    case 'n': ok = literal(c, "null"); break;
    default: ok = number(c); break;
  }
  whitespace(c);
  c->depth--;
  return ok;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct cursor c = {data, data + size, 0};
  if (!value(&c) || c.at != c.end) return -1;
  return 0;
}
