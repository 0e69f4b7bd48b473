#!/usr/bin/env bash
# Runs one labelfuzz fuzzer for a long time, pinned to one core, and samples its summary.json
# every minute: how executions per second, labels and edges evolve over a run (the closing note
# of issue 12 compares the "already run" filter before and after its fix this way).
#   bench/sample-run.sh FUZZER OUT_DIR SECS CORE [FUZZER FLAGS...]
# Writes OUT_DIR.jsonl: one line a minute, {"t", "execs", "labels", "edges", "corpus", "rss"}.
set -euo pipefail
fuzzer="${1:?usage: sample-run.sh FUZZER OUT_DIR SECS CORE [FLAGS...]}"
out="${2:?OUT_DIR}"; secs="${3:?SECS}"; core="${4:?CORE}"; shift 4
rm -rf "$out"; log="$out.jsonl"; : > "$log"
RUST_BACKTRACE=0 taskset -c "$core" "$fuzzer" --max-time "$secs" -o "$out" -q "$@" >/dev/null 2>&1 &
pid=$!
start=$(date +%s)
field() { sed -n "s/^  \"$1\": \([0-9.]*\),*$/\1/p" "$out/summary.json" | head -n 1; }
while kill -0 "$pid" 2>/dev/null; do
  sleep 60
  [ -f "$out/summary.json" ] || continue
  entries="$(sed -n 's/^    "entries": \([0-9]*\),*$/\1/p' "$out/summary.json" | head -n 1)"
  printf '{"t": %s, "execs": %s, "labels": %s, "edges": %s, "corpus": %s, "rss": %s}\n' \
    "$(( $(date +%s) - start ))" "$(field executions)" "$(field labels)" "$(field edges)" \
    "${entries:-0}" "$(field peak_rss_mb)" >> "$log"
done
wait "$pid" || true
echo "$log"
