#!/usr/bin/env bash
# roundtrip.sh BIN — serial round trip (submit one single-task job, wait for
# it, repeat) through a real cairn-server and 8 idle cairn-workers: the
# median of 3 runs of bench-roundtrip, as its own line
#   roundtrip: tasks=N workers=K per_s=X p50_ms=P p99_ms=Q (median of 3)
set -eu
BIN=$(cd "${1:-build-release/bin}" && pwd)
export CAIRN_BIN_DIR=$BIN
TASKS=${ROUNDTRIP_TASKS:-500}
WORKERS=${ROUNDTRIP_WORKERS:-8}
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
field() { sed -n "s/.* $1=\([0-9.]*\).*/\1/p"; }
per=(); p50=(); p99=()
for _ in 1 2 3; do
  line=$("$BIN/bench-roundtrip" --tasks "$TASKS" --workers "$WORKERS" 2>/dev/null | tail -n 1)
  echo "$line"
  per+=("$(field per_s <<<"$line")")
  p50+=("$(field p50_ms <<<"$line")")
  p99+=("$(field p99_ms <<<"$line")")
done
echo "roundtrip: tasks=$TASKS workers=$WORKERS per_s=$(printf '%s\n' "${per[@]}" | median)" \
     "p50_ms=$(printf '%s\n' "${p50[@]}" | median) p99_ms=$(printf '%s\n' "${p99[@]}" | median) (median of 3)"
