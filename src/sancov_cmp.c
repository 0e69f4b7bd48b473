// SanitizerCoverage's comparison callbacks (-fsanitize-coverage=trace-cmp), and the hooks the
// comparison routines call (memcmp, strcmp...).
//
// They feed two consumers, each only while it listens:
// - CmpLog: while a traced execution runs (libafl_cmplog_enabled), each comparison's operands go
//   into LibAFL's CmpLog map, for the input-to-state mutants;
// - the value profile: only with -use_value_profile=1 (labelfuzz_value_profile_enabled), each
//   site's best count of equal operand bits goes into LibAFL's value-profile map.
// LibAFL's own callbacks compute the value profile on every comparison of every execution, a
// popcount and a store that a run without value profile never reads; on a parser such as
// SQLite's that was an eighth of the fuzzer's time.
//
// The CmpLog map's layout is LibAFL's (libafl_targets/src/cmplog.h); labelfuzz checks the sizes
// it assumes at compile time (src/value_profile.rs).

#include <stddef.h>
#include <stdint.h>

#define CMPLOG_MAP_W 65536
#define CMPLOG_MAP_H 32
#define CMPLOG_KIND_INS 0
#define CMPLOG_RTN_LEN 32
#define VALUE_PROFILE_MAP_SIZE 65536

typedef struct {
  uint16_t hits;
  uint8_t shape;
  uint8_t kind;
} cmplog_header;

typedef struct {
  uint64_t v0;
  uint64_t v1;
  uint8_t v0_is_const;
} cmplog_operands;

typedef struct {
  cmplog_header headers[CMPLOG_MAP_W];
  cmplog_operands operands[CMPLOG_MAP_W][CMPLOG_MAP_H];
} cmplog_map;

extern uint8_t libafl_cmplog_enabled;
extern cmplog_map *libafl_cmplog_map_ptr;
extern uint8_t libafl_cmp_map[VALUE_PROFILE_MAP_SIZE];
void __libafl_targets_cmplog_routines_len(uintptr_t k, const uint8_t *ptr1, const uint8_t *ptr2,
                                          size_t len);

// Set by labelfuzz when comparisons are labels (-use_value_profile=1).
uint8_t labelfuzz_value_profile_enabled;

static inline uintptr_t site_of(uintptr_t pc) { return (pc >> 4) ^ (pc << 8); }

static inline void log_operands(uintptr_t site, uint8_t size, uint64_t a, uint64_t b,
                                uint8_t a_is_const) {
  // Off while logging, so that nothing this calls logs itself.
  libafl_cmplog_enabled = 0;
  uintptr_t k = site & (CMPLOG_MAP_W - 1);
  cmplog_header *header = &libafl_cmplog_map_ptr->headers[k];
  uint8_t shape = size - 1;
  uint16_t hit;
  if (header->kind != CMPLOG_KIND_INS) {
    header->kind = CMPLOG_KIND_INS;
    header->hits = 1;
    header->shape = shape;
    hit = 0;
  } else {
    hit = header->hits++;
    if (header->shape < shape) header->shape = shape;
  }
  cmplog_operands *slot = &libafl_cmplog_map_ptr->operands[k][hit & (CMPLOG_MAP_H - 1)];
  slot->v0 = a;
  slot->v1 = b;
  slot->v0_is_const = a_is_const;
  libafl_cmplog_enabled = 1;
}

static inline void profile_value(uintptr_t site, uint64_t equal_bits_mask, unsigned width) {
  uintptr_t k = site & (VALUE_PROFILE_MAP_SIZE - 1);
  // Bits outside the operands' width are not compared.
  uint64_t mask = width == 64 ? ~(uint64_t)0 : (((uint64_t)1 << width) - 1);
  uint8_t equal = (uint8_t)__builtin_popcountll(equal_bits_mask & mask);
  if (libafl_cmp_map[k] < equal) libafl_cmp_map[k] = equal;
}

static inline void on_compare(uintptr_t pc, uint8_t size, uint64_t a, uint64_t b,
                              uint8_t a_is_const) {
  if (__builtin_expect(!(libafl_cmplog_enabled | labelfuzz_value_profile_enabled), 1)) return;
  uintptr_t site = site_of(pc);
  if (labelfuzz_value_profile_enabled) profile_value(site, ~(a ^ b), size * 8u);
  if (libafl_cmplog_enabled) log_operands(site, size, a, b, a_is_const);
}

#define PC ((uintptr_t)__builtin_return_address(0))

void __sanitizer_cov_trace_cmp1(uint8_t a, uint8_t b) { on_compare(PC, 1, a, b, 0); }
void __sanitizer_cov_trace_cmp2(uint16_t a, uint16_t b) { on_compare(PC, 2, a, b, 0); }
void __sanitizer_cov_trace_cmp4(uint32_t a, uint32_t b) { on_compare(PC, 4, a, b, 0); }
void __sanitizer_cov_trace_cmp8(uint64_t a, uint64_t b) { on_compare(PC, 8, a, b, 0); }
void __sanitizer_cov_trace_const_cmp1(uint8_t a, uint8_t b) { on_compare(PC, 1, a, b, 1); }
void __sanitizer_cov_trace_const_cmp2(uint16_t a, uint16_t b) { on_compare(PC, 2, a, b, 1); }
void __sanitizer_cov_trace_const_cmp4(uint32_t a, uint32_t b) { on_compare(PC, 4, a, b, 1); }
void __sanitizer_cov_trace_const_cmp8(uint64_t a, uint64_t b) { on_compare(PC, 8, a, b, 1); }

// cases[0] is the number of cases, cases[1] the operand width in bits, then the case values.
void __sanitizer_cov_trace_switch(uint64_t value, uint64_t *cases) {
  if (__builtin_expect(!(libafl_cmplog_enabled | labelfuzz_value_profile_enabled), 1)) return;
  uintptr_t pc = PC;
  uint8_t size = (uint8_t)(cases[1] / 8);
  if (size == 0 || size > 8) return;
  for (uint64_t i = 0; i < cases[0]; i++) {
    // One site per case, the case value being the constant side.
    on_compare(pc + i, size, cases[i + 2], value, 1);
  }
}

// Indirect calls are not labels (edges already tell callees apart).
void __sanitizer_cov_trace_pc_indir(uintptr_t callee) { (void)callee; }

// The hooks a comparison routine calls with its result (our interceptors, or a sanitizer's):
// unequal operands are logged for CmpLog, up to 32 bytes.
static size_t bounded_strlen(const char *a, const char *b, size_t limit) {
  size_t n = 0;
  while (n < limit && a[n] && b[n]) n++;
  return n;
}

static void log_routine(void *pc, const void *a, const void *b, size_t n) {
  if (!libafl_cmplog_enabled) return;
  __libafl_targets_cmplog_routines_len(site_of((uintptr_t)pc) & (CMPLOG_MAP_W - 1),
                                       (const uint8_t *)a, (const uint8_t *)b,
                                       n < CMPLOG_RTN_LEN ? n : CMPLOG_RTN_LEN);
}

void __sanitizer_weak_hook_memcmp(void *pc, const void *a, const void *b, size_t n, int result) {
  if (result != 0) log_routine(pc, a, b, n);
}

void __sanitizer_weak_hook_strncmp(void *pc, const char *a, const char *b, size_t n, int result) {
  if (result != 0 && libafl_cmplog_enabled)
    log_routine(pc, a, b, bounded_strlen(a, b, n < CMPLOG_RTN_LEN ? n : CMPLOG_RTN_LEN));
}

void __sanitizer_weak_hook_strncasecmp(void *pc, const char *a, const char *b, size_t n,
                                       int result) {
  __sanitizer_weak_hook_strncmp(pc, a, b, n, result);
}

void __sanitizer_weak_hook_strcmp(void *pc, const char *a, const char *b, int result) {
  if (result != 0 && libafl_cmplog_enabled)
    log_routine(pc, a, b, bounded_strlen(a, b, CMPLOG_RTN_LEN));
}

void __sanitizer_weak_hook_strcasecmp(void *pc, const char *a, const char *b, int result) {
  __sanitizer_weak_hook_strcmp(pc, a, b, result);
}
