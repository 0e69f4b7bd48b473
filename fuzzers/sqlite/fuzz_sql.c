/* SQLite: the input is SQL text, run against a fresh in-memory database. Limits keep each
 * execution small (string and row sizes, a progress handler that interrupts long queries), so
 * that what remains is SQLite's logic, not its appetite for memory or time. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sqlite3.h"

/* Interrupts a statement after this many virtual-machine steps (times the handler period). */
enum { PROGRESS_PERIOD = 1000, PROGRESS_BUDGET = 100 };

static int progress_left;

static int interrupt_when_done(void *unused) {
  (void)unused;
  return --progress_left <= 0;
}

static int ignore_rows(void *unused, int columns, char **values, char **names) {
  (void)unused;
  (void)columns;
  (void)values;
  (void)names;
  return 0;
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  /* A heap limit makes huge allocations fail inside SQLite instead of exhausting memory. */
  sqlite3_initialize();
  sqlite3_hard_heap_limit64(64 << 20);
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *sql = malloc(size + 1);
  if (sql == NULL) return 0;
  memcpy(sql, data, size);
  sql[size] = '\0';

  sqlite3 *db = NULL;
  if (sqlite3_open_v2(":memory:", &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) ==
      SQLITE_OK) {
    sqlite3_limit(db, SQLITE_LIMIT_LENGTH, 1 << 20);
    sqlite3_limit(db, SQLITE_LIMIT_SQL_LENGTH, 1 << 16);
    sqlite3_limit(db, SQLITE_LIMIT_LIKE_PATTERN_LENGTH, 256);
    sqlite3_limit(db, SQLITE_LIMIT_VARIABLE_NUMBER, 64);
    progress_left = PROGRESS_BUDGET;
    sqlite3_progress_handler(db, PROGRESS_PERIOD, interrupt_when_done, NULL);
    sqlite3_exec(db, sql, ignore_rows, NULL, NULL);
  }
  sqlite3_close(db);
  free(sql);
  return 0;
}
