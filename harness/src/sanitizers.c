/* Hooks that turn an AddressSanitizer report into a labelfuzz crash label. Without them ASan
 * ends the process with _exit(1): no reproducer, no label. */
#include <stddef.h>

/* Present only when the fuzzer is linked with -fsanitize=address. */
extern const char *__asan_get_report_description(void) __attribute__((weak));

/* In the labelfuzz harness: remembers the bug type and the site (the stack, walked there). */
extern void labelfuzz_harness_sanitizer_report(const char *tool, const char *bug);

/* Defaults, overridden by ASAN_OPTIONS. abort_on_error: the report ends in SIGABRT, which the
 * engine's handler turns into a saved reproducer and a restart. detect_leaks: leak checks run
 * at exit, which a fuzzer never reaches; malloc_context_size: cheaper allocations. */
const char *__asan_default_options(void) {
  return "abort_on_error=1:detect_leaks=0:malloc_context_size=4:handle_abort=0";
}

/* Called by ASan when it starts a report, before it prints (and symbolizes) it and aborts. */
void __asan_on_error(void) {
  const char *bug = __asan_get_report_description ? __asan_get_report_description() : NULL;
  labelfuzz_harness_sanitizer_report("AddressSanitizer", bug ? bug : "unknown-crash");
}
