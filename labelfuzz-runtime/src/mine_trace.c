// The mining build's callbacks: which function read each input byte last, and how the
// functions were nested when it did (seed 002: the nesting of those reads is a parse tree).
//
// A mining build (LABELFUZZ_MINE=1) calls __sanitizer_cov_trace_pc at every function's entry and
// __sanitizer_cov_load<N> before every load. There is no callback on return; an invocation is
// known by its canonical frame address (CFA: the stack pointer before the call that made it),
// and it has returned once a later callback's caller has a higher CFA (the stack grows down),
// or the same one at an entry (a sibling called from the same frame). The mining build keeps
// frame pointers, so the callback's caller's CFA is its saved frame pointer plus the saved
// frame pointer's and the return address's slots.
//
// Recording happens only between labelfuzz_mine_begin and labelfuzz_mine_end, on one thread (the
// one mining); outside it each entry callback only checks whether the error function named with
// --mine-error was entered.

#include <stddef.h>
#include <stdint.h>

// One function invocation: the address of its entry callback's return, the call site it was
// called from (its own return address), and its caller's node.
typedef struct {
  uintptr_t pc;
  uintptr_t site;
  uint32_t parent;
} labelfuzz_mine_node;

#define NO_NODE UINT32_MAX
// Set in an owner entry when a one-byte load (or a comparison) gave the byte its owner.
#define READ_ALONE 0x80000000u
#define STACK_CAPACITY 4096

// Read by the comparison callbacks (sancov_cmp.c), which hand a compared byte over while set.
uint8_t labelfuzz_mine_recording;
#define recording labelfuzz_mine_recording
static uintptr_t input_start;
static size_t input_len;
static uint32_t *owners;
static labelfuzz_mine_node *nodes;
static size_t node_capacity;
static size_t node_count;
static uint8_t overflowed;

static struct {
  uintptr_t cfa;
  uint32_t node;
} stack[STACK_CAPACITY];
static size_t depth;

// The input byte the last one-byte load read, if the last load was one (else SIZE_MAX).
static size_t last_byte_at = SIZE_MAX;
static uint8_t last_byte;

static uintptr_t error_start;
static uintptr_t error_end;
static uint8_t error_entered;

#define CALLER_CFA() ((uintptr_t)__builtin_frame_address(1) + 2 * sizeof(void *))

// Drops the invocations that have returned: those with a CFA below `cfa`, and at a new entry
// also the one with `cfa` itself.
static inline __attribute__((always_inline)) void unwind(uintptr_t cfa, int entering) {
  while (depth > 0 &&
         (stack[depth - 1].cfa < cfa || (entering && stack[depth - 1].cfa == cfa))) {
    depth--;
  }
}

void __sanitizer_cov_trace_pc(void) {
  uintptr_t pc = (uintptr_t)__builtin_return_address(0);
  if (pc - error_start < error_end - error_start) error_entered = 1;
  if (!recording) return;
  // A comparison after another call is no longer about the byte the last load read.
  last_byte_at = SIZE_MAX;
  uintptr_t cfa = CALLER_CFA();
  unwind(cfa, 1);
  if (node_count == node_capacity || depth == STACK_CAPACITY) {
    overflowed = 1;
    return;
  }
  uint32_t parent = depth > 0 ? stack[depth - 1].node : NO_NODE;
  nodes[node_count].pc = pc;
  nodes[node_count].site = (uintptr_t)__builtin_return_address(1);
  nodes[node_count].parent = parent;
  stack[depth].cfa = cfa;
  stack[depth].node = (uint32_t)node_count;
  depth++;
  node_count++;
}

static inline __attribute__((always_inline)) void load(uintptr_t address, size_t size,
                                                      uintptr_t cfa) {
  if (address + size <= input_start || address >= input_start + input_len) return;
  unwind(cfa, 0);
  uint32_t owner = depth > 0 ? stack[depth - 1].node : NO_NODE;
  last_byte_at = SIZE_MAX;
  if (size == 1) {
    last_byte_at = address - input_start;
    last_byte = *(const uint8_t *)address;
  }
  for (size_t i = 0; i < size; i++) {
    uintptr_t at = address + i;
    if (at < input_start || at >= input_start + input_len) continue;
    uint32_t *slot = &owners[at - input_start];
    // A byte read alone is consumed; a wide load (a scanner looking eight bytes ahead for a
    // quote) takes only bytes no lone read has claimed.
    if (size == 1)
      *slot = owner == NO_NODE ? NO_NODE : (owner | READ_ALONE);
    else if (*slot == NO_NODE || !(*slot & READ_ALONE))
      *slot = owner;
  }
}

#define LOAD_CALLBACK(bytes)                                           \
  void __sanitizer_cov_load##bytes(void *address) {                    \
    if (recording) load((uintptr_t)address, bytes, CALLER_CFA());       \
  }
LOAD_CALLBACK(1)
LOAD_CALLBACK(2)
LOAD_CALLBACK(4)
LOAD_CALLBACK(8)
LOAD_CALLBACK(16)

// A byte compared after it was read belongs to the function that compared it (its caller's
// frame is at `cfa`), when that is not the reader: a parser that peeks in one function
// (`skip_whitespace` returning the next byte) and dispatches on the byte in its caller, never
// reading it again, consumes the byte where it compares it. Called by the one-byte comparison
// callbacks with their variable operands; only a comparison before any other load or call
// counts (later ones are about other values that happen to be equal).
void labelfuzz_mine_compared(uint8_t value, uintptr_t cfa) {
  if (last_byte_at == SIZE_MAX || value != last_byte) return;
  unwind(cfa, 0);
  owners[last_byte_at] = depth > 0 ? (stack[depth - 1].node | READ_ALONE) : NO_NODE;
}

// Starts recording the reads of `data[0..len]`: `owner_out[i]` becomes the node of the function
// that read byte i last (NO_NODE if none did; the READ_ALONE bit may be set), `node_out`
// receives the invocations.
void labelfuzz_mine_begin(const uint8_t *data, size_t len, uint32_t *owner_out,
                          labelfuzz_mine_node *node_out, size_t capacity) {
  input_start = (uintptr_t)data;
  input_len = len;
  owners = owner_out;
  nodes = node_out;
  node_capacity = capacity;
  node_count = 0;
  overflowed = 0;
  depth = 0;
  last_byte_at = SIZE_MAX;
  recording = 1;
}

// Stops recording; returns how many nodes were written and whether some were left out.
size_t labelfuzz_mine_end(uint8_t *overflowed_out) {
  recording = 0;
  *overflowed_out = overflowed;
  return node_count;
}

// Watches for entries into the function at [start, end) (empty: none).
void labelfuzz_mine_watch(uintptr_t start, uintptr_t end) {
  error_start = start;
  error_end = end;
  error_entered = 0;
}

// Whether the watched function was entered since the last call (or the watch began).
uint8_t labelfuzz_mine_take_error(void) {
  uint8_t entered = error_entered;
  error_entered = 0;
  return entered;
}
