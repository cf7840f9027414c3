#!/usr/bin/env bash
# dispatch.sh BIN — dispatch throughput and master CPU per task, 8 workers:
# the exec app, and the callback app one task a request (--prefetch 0) and
# in batches (--prefetch 7: 8 tasks a request, feature "batch"); the median
# of 3 runs per size, and N from 10^3 to 10^5 to show the master's CPU per
# task stays flat.
set -eu
BIN=$(cd "${1:-build-release/bin}" && pwd)
export CAIRN_BIN_DIR=$BIN
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
for variant in exec:0 callback:0 callback:7; do
  app=${variant%:*} prefetch=${variant#*:}
  for n in 1000 10000 100000; do
    [ "$app" = exec ] && [ "$n" = 100000 ] && continue   # 10^5 fork/execs take minutes
    tps=(); cpu=()
    for _ in 1 2 3; do
      line=$("$BIN/bench-dispatch" --tasks "$n" --workers 8 --app "$app" --prefetch "$prefetch" \
               2>/dev/null | tail -n 1)
      tps+=("$(sed -n 's/.*tasks_per_s=\([0-9.]*\).*/\1/p' <<<"$line")")
      cpu+=("$(sed -n 's/.*master_cpu_us_per_task=\([0-9.]*\).*/\1/p' <<<"$line")")
    done
    echo "dispatch: app=$app tasks=$n workers=8 prefetch=$prefetch tasks_per_s=$(printf '%s\n' "${tps[@]}" | median) master_cpu_us_per_task=$(printf '%s\n' "${cpu[@]}" | median) (median of 3)"
  done
done
