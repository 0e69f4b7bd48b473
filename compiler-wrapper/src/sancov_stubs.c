/* Weak, empty SanitizerCoverage callbacks. labelfuzz-cc instruments every object it compiles;
 * an executable that is not a fuzzer (a configure probe, a library's command-line tool) still
 * needs these symbols to link. A fuzzer gets the real ones from the labelfuzz harness, and any
 * strong definition (a sanitizer runtime's) wins over these. */
#include <stdint.h>

__attribute__((weak)) void __sanitizer_cov_trace_pc_guard_init(uint32_t *start, uint32_t *stop) {
  (void)start;
  (void)stop;
}

__attribute__((weak)) void __sanitizer_cov_trace_pc_guard(uint32_t *guard) { (void)guard; }

/* Comparison tracing (-fsanitize-coverage=trace-cmp). */
#define LABELFUZZ_CMP_STUB(name, type) \
  __attribute__((weak)) void name(type a, type b) { (void)a; (void)b; }
LABELFUZZ_CMP_STUB(__sanitizer_cov_trace_cmp1, uint8_t)
LABELFUZZ_CMP_STUB(__sanitizer_cov_trace_cmp2, uint16_t)
LABELFUZZ_CMP_STUB(__sanitizer_cov_trace_cmp4, uint32_t)
LABELFUZZ_CMP_STUB(__sanitizer_cov_trace_cmp8, uint64_t)
LABELFUZZ_CMP_STUB(__sanitizer_cov_trace_const_cmp1, uint8_t)
LABELFUZZ_CMP_STUB(__sanitizer_cov_trace_const_cmp2, uint16_t)
LABELFUZZ_CMP_STUB(__sanitizer_cov_trace_const_cmp4, uint32_t)
LABELFUZZ_CMP_STUB(__sanitizer_cov_trace_const_cmp8, uint64_t)

__attribute__((weak)) void __sanitizer_cov_trace_switch(uint64_t value, uint64_t *cases) {
  (void)value;
  (void)cases;
}
