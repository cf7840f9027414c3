#!/usr/bin/env bash
# chain.sh BIN — the audit chain's cost: dispatch with the chain on and off in
# the same run (bench-dispatch, callback app, 10^4 tasks, 8 workers, runs
# alternating on/off, the median of 3 each), then the size per entry and the
# verification time of a chain of 10^6 entries and the live rows it describes,
# with --chain-only and with the live tables' check (bench-chain, which runs
# $CAIRN_BIN_DIR/cairn audit verify --db).
set -eu
BIN=$(cd "${1:-build-release/bin}" && pwd)
export CAIRN_BIN_DIR=$BIN
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
declare -A tps cpu
for _ in 1 2 3; do
  for chain in on off; do
    line=$("$BIN/bench-dispatch" --tasks 10000 --workers 8 --app callback \
             --audit-chain "$chain" 2>/dev/null | tail -n 1)
    tps[$chain]+="$(sed -n 's/.*tasks_per_s=\([0-9.]*\).*/\1/p' <<<"$line") "
    cpu[$chain]+="$(sed -n 's/.*master_cpu_us_per_task=\([0-9.]*\).*/\1/p' <<<"$line") "
  done
done
for chain in on off; do
  echo "dispatch: app=callback tasks=10000 workers=8 audit_chain=$chain" \
       "tasks_per_s=$(tr ' ' '\n' <<<"${tps[$chain]}" | grep . | median)" \
       "master_cpu_us_per_task=$(tr ' ' '\n' <<<"${cpu[$chain]}" | grep . | median) (median of 3)"
done
"$BIN/bench-chain" --entries 1000000
