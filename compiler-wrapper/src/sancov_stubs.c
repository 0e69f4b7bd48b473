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
