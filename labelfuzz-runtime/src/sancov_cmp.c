// SanitizerCoverage's comparison callbacks (-fsanitize-coverage=trace-cmp), and the hooks the
// comparison routines call (memcmp, strcmp...).
//
// They feed three consumers, each only while it listens:
// - CmpLog: while a traced execution runs (libafl_cmplog_enabled), each comparison's operands go
//   into LibAFL's CmpLog map, for the input-to-state mutants;
// - the value profile: only with -use_value_profile=1 (labelfuzz_value_profile_enabled), each
//   site's best count of equal operand bits goes into LibAFL's value-profile map;
// - comparison progress: once switched on (labelfuzz_progress_enabled, --cmp-progress), each
//   site's count of equal outcomes and its closest operands in this execution
//   (src/cmp_progress.rs reads them);
// - gate repair: while labelfuzz_gate_watching, the first operands each of a few watched sites
//   compares in the execution (src/gate_watch.rs), so that a mutant's checksum can be read
//   without logging every comparison into the 50 MiB CmpLog map;
// - grammar mining: while a mining build records (labelfuzz_mine_recording), a one-byte
//   comparison tells the recorder which function compared the byte last read (mine_trace.c).
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

// Comparison progress. A counter compared to a constant (`run == 4`), or a byte test whose
// outcome only feeds a select, changes no edge and no hit count until the bug fires; what does
// change is how often the comparison comes out equal and how close its operands come. Per site
// and execution: `equal`, how many times the operands were equal (saturating), and `closeness`,
// 65 minus the bit length of the smallest |a - b| seen (0: none kept). Only comparisons with a
// constant side are recorded (see progress_worth_recording). Closeness is kept only
// for sites never equal in this process (a solved site's distances are no longer progress, and a
// loop bound is equal at its last iteration) and only for operands wider than a byte (a byte is
// one guess away, and CmpLog copies it). The touched list holds this execution's sites, so that reading
// and clearing cost what the target used, not the map's size.
#define PROGRESS_MAP_SIZE 65536
typedef struct {
  uint8_t equal;
  uint8_t closeness;
  uint8_t solved;
  uint8_t touched;
} progress_cell;
uint8_t labelfuzz_progress_enabled;
extern uint8_t labelfuzz_mine_recording;
void labelfuzz_mine_compared(uint8_t value, uintptr_t cfa);
progress_cell labelfuzz_progress_map[PROGRESS_MAP_SIZE];
uint16_t labelfuzz_progress_touched[PROGRESS_MAP_SIZE];
uint32_t labelfuzz_progress_touched_len;

// Gate repair: the watched sites (CmpLog map indices) and what each compared first.
#define GATE_SITES 4
typedef struct {
  uint64_t a;
  uint64_t b;
  uint8_t seen;
} gate_reading;
uint8_t labelfuzz_gate_watching;
uint32_t labelfuzz_gate_count;
uint32_t labelfuzz_gate_sites[GATE_SITES];
gate_reading labelfuzz_gate_readings[GATE_SITES];

static inline void watch_gates(uintptr_t site, uint64_t a, uint64_t b) {
  uint32_t k = (uint32_t)(site & (CMPLOG_MAP_W - 1));
  uint32_t count = labelfuzz_gate_count < GATE_SITES ? labelfuzz_gate_count : GATE_SITES;
  for (uint32_t i = 0; i < count; i++) {
    if (labelfuzz_gate_sites[i] == k && !labelfuzz_gate_readings[i].seen) {
      labelfuzz_gate_readings[i].a = a;
      labelfuzz_gate_readings[i].b = b;
      labelfuzz_gate_readings[i].seen = 1;
    }
  }
}

// Whether any consumer listens: the one test every callback makes first. Usually none does
// (CmpLog listens only during its traced runs; the labels only when asked for).
static inline int anyone_listens(void) {
  return libafl_cmplog_enabled | labelfuzz_value_profile_enabled | labelfuzz_progress_enabled |
         labelfuzz_mine_recording | labelfuzz_gate_watching;
}

// The frame address of the function that called the callback this is inlined into (its CFA, as
// mine_trace.c reckons it).
#define CALLER_CFA() ((uintptr_t)__builtin_frame_address(1) + 2 * sizeof(void *))

// A one-byte comparison in a mining build hands its variable operands to the recorder (a
// constant equal to the byte last read is no sign that the byte is what was compared).
#define TELL_MINER(size, a, b, a_is_const)                      \
  do {                                                          \
    if (labelfuzz_mine_recording && (size) == 1) {              \
      if (!(a_is_const)) labelfuzz_mine_compared((uint8_t)(a), CALLER_CFA()); \
      labelfuzz_mine_compared((uint8_t)(b), CALLER_CFA());      \
    }                                                           \
  } while (0)

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

static inline void record_progress(uintptr_t site, uint8_t size, uint64_t a, uint64_t b) {
  uint32_t k = (uint32_t)(site & (PROGRESS_MAP_SIZE - 1));
  progress_cell *cell = &labelfuzz_progress_map[k];
  if (!cell->touched) {
    // A site enters the list once per execution, and there are as many slots as sites.
    cell->touched = 1;
    labelfuzz_progress_touched[labelfuzz_progress_touched_len++] = (uint16_t)k;
  }
  if (a == b) {
    if (cell->equal != 255) cell->equal++;
    cell->solved = 1;
    return;
  }
  if (size < 2 || cell->solved) return;
  uint64_t distance = a > b ? a - b : b - a;
  uint8_t closeness = (uint8_t)(1 + __builtin_clzll(distance));
  if (cell->closeness < closeness) cell->closeness = closeness;
}

// Progress only where one side is a constant of the program: that is where a magic value or a
// count to reach lives. Comparisons of two variables are mostly bounds and loop checks, and so
// are 64-bit comparisons with a small constant (lengths and indices are 64 bits wide on this
// target): their counts and distances follow the input's length, they run on every iteration,
// and recording them cost a third of a JSON parser's executions per second.
static inline int progress_worth_recording(uint8_t size, uint64_t constant, uint8_t is_const) {
  return is_const && !(size == 8 && constant < 65536);
}

// Inlined, so that CALLER_CFA names the compiled code's frame, not the callback's.
static inline __attribute__((always_inline)) void on_compare(uintptr_t pc, uint8_t size,
                                                             uint64_t a, uint64_t b,
                                                             uint8_t a_is_const) {
  if (__builtin_expect(!anyone_listens(), 1)) return;
  TELL_MINER(size, a, b, a_is_const);
  uintptr_t site = site_of(pc);
  if (labelfuzz_progress_enabled && progress_worth_recording(size, a, a_is_const))
    record_progress(site, size, a, b);
  if (labelfuzz_value_profile_enabled) profile_value(site, ~(a ^ b), size * 8u);
  if (libafl_cmplog_enabled) log_operands(site, size, a, b, a_is_const);
  if (labelfuzz_gate_watching && size >= 4) watch_gates(site, a, b);
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
  if (__builtin_expect(!anyone_listens(), 1)) return;
  uintptr_t pc = PC;
  uint8_t size = (uint8_t)(cases[1] / 8);
  if (size == 0 || size > 8) return;
  TELL_MINER(size, value, value, 1);
  // A switch's cases are edges already: progress only for wide values (magic numbers), where a
  // case is far from one guess away.
  uint8_t progress = labelfuzz_progress_enabled && size > 1;
  uint8_t others = libafl_cmplog_enabled | labelfuzz_value_profile_enabled;
  if (!(progress | others)) return;
  for (uint64_t i = 0; i < cases[0]; i++) {
    // One site per case, the case value being the constant side.
    uintptr_t site = site_of(pc + i);
    if (progress && progress_worth_recording(size, cases[i + 2], 1))
      record_progress(site, size, cases[i + 2], value);
    if (others) {
      if (labelfuzz_value_profile_enabled) profile_value(site, ~(cases[i + 2] ^ value), size * 8u);
      if (libafl_cmplog_enabled) log_operands(site, size, cases[i + 2], value, 1);
    }
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
