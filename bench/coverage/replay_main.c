// The benchmark's coverage yardstick: runs every input named in a list file through
// LLVMFuzzerTestOneInput once, in a binary built with clang's source-based coverage, so that
// every fuzzer's corpus is measured by the same build.
//
//   replay_main LIST [FIRST]   runs the inputs on lines FIRST.. of LIST (paths, one per line)
//
// An input that crashes, hangs (REPLAY_TIMEOUT seconds, default 5), aborts or exits must not lose
// the coverage of the inputs before it: the handler writes the profile and exits, and the index
// of the input being run is always in REPLAY_PROGRESS (a file), so the caller goes on after it in
// a new process (LLVM_PROFILE_FILE with %p keeps the processes' profiles apart).
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
__attribute__((weak)) int LLVMFuzzerInitialize(int *argc, char ***argv);
int __llvm_profile_write_file(void);

static int progress_fd = -1;

// Records that input `index` is about to run (8 bytes at offset 0: one pwrite, no allocation).
static void note_progress(long index) {
  if (progress_fd >= 0) (void)!pwrite(progress_fd, &index, sizeof index, 0);
}

static void on_fault(int sig) {
  (void)sig;
  __llvm_profile_write_file();
  _exit(77);
}

static void install_handlers(void) {
  static char alternate_stack[1 << 16];
  stack_t ss = {.ss_sp = alternate_stack, .ss_size = sizeof alternate_stack};
  sigaltstack(&ss, NULL);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_fault;
  sa.sa_flags = SA_ONSTACK;
  int signals[] = {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL, SIGALRM, SIGTRAP};
  for (size_t i = 0; i < sizeof signals / sizeof signals[0]; i++) sigaction(signals[i], &sa, NULL);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s LIST [FIRST]\n", argv[0]);
    return 2;
  }
  FILE *list = fopen(argv[1], "r");
  if (!list) {
    perror(argv[1]);
    return 2;
  }
  long first = argc > 2 ? atol(argv[2]) : 0;
  const char *timeout_text = getenv("REPLAY_TIMEOUT");
  unsigned timeout = timeout_text ? (unsigned)atoi(timeout_text) : 5;
  const char *progress_path = getenv("REPLAY_PROGRESS");
  if (progress_path) progress_fd = open(progress_path, O_WRONLY | O_CREAT, 0644);
  install_handlers();
  if (LLVMFuzzerInitialize) LLVMFuzzerInitialize(&argc, &argv);

  char path[4096];
  uint8_t *buffer = NULL;
  size_t capacity = 0;
  for (long index = 0; fgets(path, sizeof path, list); index++) {
    if (index < first) continue;
    path[strcspn(path, "\n")] = 0;
    FILE *input = fopen(path, "rb");
    if (!input) continue;  // a fuzzer may delete a corpus file while we list it
    size_t size = 0;
    for (;;) {
      if (size == capacity) {
        capacity = capacity ? capacity * 2 : 1 << 16;
        buffer = realloc(buffer, capacity);
        if (!buffer) return 2;
      }
      size_t got = fread(buffer + size, 1, capacity - size, input);
      if (got == 0) break;
      size += got;
    }
    fclose(input);
    // A copy of exactly the input's size, so that reads past its end are as in the fuzzers.
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy) return 2;
    memcpy(copy, buffer, size);
    note_progress(index);
    alarm(timeout);
    LLVMFuzzerTestOneInput(copy, size);
    alarm(0);
    free(copy);
  }
  return 0;
}
