// The default for targets that are not typed: C harnesses and Rust byte targets.
//
// A Rust fuzz crate whose target takes an `Arbitrary` type defines the strong
// `labelfuzz_sys_debug_form` (in labelfuzz-sys), which decodes an input and hands its `Debug`
// form to `sink`. This weak definition keeps every other executable linking: it says "no typed
// target" with -1.

#include <stddef.h>
#include <stdint.h>

__attribute__((weak)) int labelfuzz_sys_debug_form(
    const uint8_t *data, size_t size,
    void (*sink)(void *context, const uint8_t *text, size_t len), void *context) {
  (void)data;
  (void)size;
  (void)sink;
  (void)context;
  return -1;
}
