#!/usr/bin/env bash
# volunteers.sh BIN [bench-volunteers flags] — the master under N simulated
# volunteers (one request each every 30 s on average) while real workers
# dispatch a job: N = 10^3, 10^4, 3·10^4, 10^5, three runs each (REPEAT),
# the median of each figure. Stops at the first N that breaks (median p99
# >= 100 ms, or errors in most runs) and names the largest N that holds.
# Each run is bounded (timeout 300 s; 20–60 s measured); the whole script
# about 12 minutes. Every process a run starts is stopped by that run.
set -eu
BIN=$(cd "${1:-build-release/bin}" && pwd)
shift || true
export CAIRN_BIN_DIR=$BIN
REPEAT=${REPEAT:-3}
field() { sed -n "s/.* $1=\([-0-9.]*\).*/\1/p"; }
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
keys="req_per_s p50_ms p99_ms p999_ms errors throttled rss_per_volunteer_bytes master_rss_kib master_cpu_pct dispatch_per_s reg_per_s"
printf '%-7s %8s %8s %7s %7s %8s %6s %9s %9s %8s %8s %8s\n' n offered req/s p50_ms p99_ms \
  p999_ms errors throttled B/vol rss_MiB cpu_% disp/s
held=0; broke=""
for spec in 1000:20 10000:30 30000:45 100000:60; do
  n=${spec%:*}; dur=${spec#*:}
  lines=()
  for _ in $(seq "$REPEAT"); do
    line=$(timeout 300 "$BIN/bench-volunteers" --n "$n" --duration "$dur" "$@" 2>/dev/null |
           grep '^volunteers:' || true)
    [ -n "$line" ] && lines+=("$line")
  done
  if [ "${#lines[@]}" -eq 0 ]; then broke="n=$n: no run finished"; break; fi
  declare -A med=()
  for k in $keys; do
    med[$k]=$(printf '%s\n' "${lines[@]}" | field "$k" | median)
  done
  max_err=$(printf '%s\n' "${lines[@]}" | field errors | sort -g | tail -n 1)
  printf '%-7s %8.0f %8.0f %7.2f %7.2f %8.2f %6s %9s %9s %8.1f %8.1f %8.1f\n' "$n" \
    "$(awk -v n="$n" 'BEGIN { print n / 30 }')" "${med[req_per_s]}" "${med[p50_ms]}" \
    "${med[p99_ms]}" "${med[p999_ms]}" "${med[errors]}/$max_err" "${med[throttled]}" \
    "${med[rss_per_volunteer_bytes]}" "$(awk -v k="${med[master_rss_kib]}" 'BEGIN { print k / 1024 }')" \
    "${med[master_cpu_pct]}" "${med[dispatch_per_s]}"
  if awk -v p="${med[p99_ms]}" -v e="${med[errors]}" 'BEGIN { exit !(p >= 100 || e > 0) }'; then
    broke="n=$n: median p99 ${med[p99_ms]} ms, median errors ${med[errors]}"
    break
  fi
  held=$n
done
echo "(median of $REPEAT runs per row; errors: median/max; registration not counted: it is the ramp-up)"
if [ -n "$broke" ]; then
  echo "volunteers: largest n that holds (p99 < 100 ms, no errors) = $held; breaks at $broke"
else
  echo "volunteers: largest n that holds (p99 < 100 ms, no errors) = $held (every n tried)"
fi
