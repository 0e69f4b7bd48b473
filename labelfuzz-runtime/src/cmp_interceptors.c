// Comparison routines interposed so that the CmpLog stage sees their operands.
//
// A keyword or magic header checked with memcmp/strcmp (or Rust's slice and str equality, which
// ends in memcmp/bcmp) is one opaque call to coverage: no edge moves until every byte matches.
// libFuzzer intercepts these calls for the same reason. Defined in the fuzzer's executable,
// these win over libc's; while a traced execution runs (libafl_cmplog_enabled), each call hands
// both operands to LibAFL's sanitizer hooks, which log them as routine operands for the
// input-to-state mutants. Everything else goes straight to the real routine.
//
// When a sanitizer runtime is linked (AddressSanitizer, MemorySanitizer...), its own
// interceptor does the bounds checks and already calls the same hooks: the call is forwarded to
// it unchanged.
//
// Compiled with -fno-builtin, so the fallback loops below never become calls to the routines
// they implement.

#define _GNU_SOURCE
#include <ctype.h>
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>

extern uint8_t libafl_cmplog_enabled;

void __sanitizer_weak_hook_memcmp(void *pc, const void *s1, const void *s2, size_t n, int result);
void __sanitizer_weak_hook_strncmp(void *pc, const char *s1, const char *s2, size_t n, int result);
void __sanitizer_weak_hook_strcmp(void *pc, const char *s1, const char *s2, int result);

typedef int (*memcmp_fn)(const void *, const void *, size_t);
typedef int (*strcmp_fn)(const char *, const char *);
typedef int (*strncmp_fn)(const char *, const char *, size_t);
typedef void *(*memmem_fn)(const void *, size_t, const void *, size_t);
typedef char *(*strstr_fn)(const char *, const char *);

// A sanitizer's interceptors (weak: null when no sanitizer is linked).
#define SANITIZER_INTERCEPTOR(ret, name, ...) \
  ret ___interceptor_##name(__VA_ARGS__) __attribute__((weak));
SANITIZER_INTERCEPTOR(int, memcmp, const void *, const void *, size_t)
SANITIZER_INTERCEPTOR(int, bcmp, const void *, const void *, size_t)
SANITIZER_INTERCEPTOR(int, strcmp, const char *, const char *)
SANITIZER_INTERCEPTOR(int, strncmp, const char *, const char *, size_t)
SANITIZER_INTERCEPTOR(int, strcasecmp, const char *, const char *)
SANITIZER_INTERCEPTOR(int, strncasecmp, const char *, const char *, size_t)
SANITIZER_INTERCEPTOR(void *, memmem, const void *, size_t, const void *, size_t)
SANITIZER_INTERCEPTOR(char *, strstr, const char *, const char *)

// Set while dlsym runs, in case it compares strings through us.
static __thread int resolving;

static void *real(const char *name) {
  if (resolving) return NULL;
  resolving = 1;
  void *found = dlsym(RTLD_NEXT, name);
  resolving = 0;
  return found;
}

#define REAL(type, name, cache) \
  (cache ? cache : (cache = (type)real(#name)))

static int fallback_memcmp(const void *a, const void *b, size_t n) {
  const unsigned char *x = a, *y = b;
  for (size_t i = 0; i < n; i++)
    if (x[i] != y[i]) return x[i] < y[i] ? -1 : 1;
  return 0;
}

static int fallback_strncmp(const char *a, const char *b, size_t n, int fold) {
  for (size_t i = 0; i < n; i++) {
    int x = (unsigned char)a[i], y = (unsigned char)b[i];
    if (fold) { x = tolower(x); y = tolower(y); }
    if (x != y) return x < y ? -1 : 1;
    if (x == 0) return 0;
  }
  return 0;
}

// memcmp and bcmp.
#define INTERCEPT_MEMORY_COMPARE(name)                                              \
  int name(const void *a, const void *b, size_t n) {                               \
    if (___interceptor_##name) return ___interceptor_##name(a, b, n);              \
    static memcmp_fn cache;                                                        \
    memcmp_fn f = REAL(memcmp_fn, name, cache);                                    \
    int result = f ? f(a, b, n) : fallback_memcmp(a, b, n);                        \
    if (libafl_cmplog_enabled)                                                     \
      __sanitizer_weak_hook_memcmp(__builtin_return_address(0), a, b, n, result);  \
    return result;                                                                 \
  }

// strcmp and strcasecmp (`fold`: case-insensitive).
#define INTERCEPT_STRING_COMPARE(name, fold)                                        \
  int name(const char *a, const char *b) {                                         \
    if (___interceptor_##name) return ___interceptor_##name(a, b);                 \
    static strcmp_fn cache;                                                        \
    strcmp_fn f = REAL(strcmp_fn, name, cache);                                    \
    int result = f ? f(a, b) : fallback_strncmp(a, b, SIZE_MAX, fold);             \
    if (libafl_cmplog_enabled)                                                     \
      __sanitizer_weak_hook_strcmp(__builtin_return_address(0), a, b, result);     \
    return result;                                                                 \
  }

// strncmp and strncasecmp.
#define INTERCEPT_BOUNDED_STRING_COMPARE(name, fold)                                \
  int name(const char *a, const char *b, size_t n) {                               \
    if (___interceptor_##name) return ___interceptor_##name(a, b, n);              \
    static strncmp_fn cache;                                                       \
    strncmp_fn f = REAL(strncmp_fn, name, cache);                                  \
    int result = f ? f(a, b, n) : fallback_strncmp(a, b, n, fold);                 \
    if (libafl_cmplog_enabled)                                                     \
      __sanitizer_weak_hook_strncmp(__builtin_return_address(0), a, b, n, result); \
    return result;                                                                 \
  }

INTERCEPT_MEMORY_COMPARE(memcmp)
INTERCEPT_MEMORY_COMPARE(bcmp)
INTERCEPT_STRING_COMPARE(strcmp, 0)
INTERCEPT_STRING_COMPARE(strcasecmp, 1)
INTERCEPT_BOUNDED_STRING_COMPARE(strncmp, 0)
INTERCEPT_BOUNDED_STRING_COMPARE(strncasecmp, 1)

// A search for a needle: the needle against the haystack's start is the comparison that
// input-to-state replacement can act on (write the needle where the input has other bytes).
void *memmem(const void *haystack, size_t haystack_len, const void *needle, size_t needle_len) {
  if (___interceptor_memmem)
    return ___interceptor_memmem(haystack, haystack_len, needle, needle_len);
  static memmem_fn cache;
  memmem_fn f = REAL(memmem_fn, memmem, cache);
  void *found = NULL;
  if (f) {
    found = f(haystack, haystack_len, needle, needle_len);
  } else if (needle_len <= haystack_len) {
    const char *h = haystack;
    for (size_t i = 0; i + needle_len <= haystack_len && !found; i++)
      if (fallback_memcmp(h + i, needle, needle_len) == 0) found = (void *)(h + i);
  }
  if (libafl_cmplog_enabled && !found && needle_len > 0 && needle_len <= haystack_len)
    __sanitizer_weak_hook_memcmp(__builtin_return_address(0), haystack, needle, needle_len, 1);
  return found;
}

char *strstr(const char *haystack, const char *needle) {
  if (___interceptor_strstr) return ___interceptor_strstr(haystack, needle);
  static strstr_fn cache;
  strstr_fn f = REAL(strstr_fn, strstr, cache);
  char *found = NULL;
  if (f) {
    found = f(haystack, needle);
  } else {
    for (const char *h = haystack;; h++) {
      size_t i = 0;
      while (needle[i] && h[i] == needle[i]) i++;
      if (!needle[i]) { found = (char *)h; break; }
      if (!*h) break;
    }
  }
  if (libafl_cmplog_enabled && !found && needle[0])
    __sanitizer_weak_hook_strcmp(__builtin_return_address(0), haystack, needle, 1);
  return found;
}
