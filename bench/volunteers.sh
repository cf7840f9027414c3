#!/usr/bin/env bash
# volunteers.sh BIN [bench-volunteers flags] — the master under N simulated
# volunteers (one request each every 30 s on average) while real workers
# dispatch a job: N = 10^3, 10^4, 3·10^4, 10^5, three runs each (REPEAT),
# the median of each figure. Stops at the first N that breaks (median p99
# >= 100 ms, or errors in most runs) and names the largest N that holds.
# Each run is bounded (timeout 300 s; 20–60 s measured); the whole script
# about 12 minutes. Every process a run starts is stopped by that run.
#
# volunteers.sh BIN --tls-compare [bench-volunteers flags] — plain HTTP and
# TLS (--tls ec) side by side, with keep-alive (--fresh 0) and with every
# request on a fresh connection (--fresh 1), at each N of NS (default
# 100000) for DURATION s (30) after a warm-up of WARMUP s (35: every
# volunteer's first request is made); REPEAT runs of the four, interleaved,
# and the median of each figure, printed as a Markdown table: p99 and
# errors, the master's CPU per request, and the TLS handshakes full and
# resumed in the window. CONNS=keepalive:0 (or fresh:1) runs one kind of
# connection only. Each run is bounded (timeout 600 s).
set -eu
BIN=$(cd "${1:-build-release/bin}" && pwd)
shift || true
export CAIRN_BIN_DIR=$BIN
REPEAT=${REPEAT:-3}
field() { sed -n "s/.* $1=\([-0-9.]*\).*/\1/p"; }
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

if [ "${1:-}" = "--tls-compare" ]; then
  shift
  ckeys="req_per_s p50_ms p99_ms p999_ms errors master_cpu_pct cpu_us_per_req tls_full tls_resumed reg_per_s"
  echo "| N | connections | TLS | offered req/s | achieved | p50 ms | p99 ms | p999 ms | errors (median/max) | master CPU % | master CPU µs/request | handshakes full | resumed | registrations/s |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
  for n in ${NS:-100000}; do
    declare -A out=()
    for _ in $(seq "$REPEAT"); do
      for conn in ${CONNS:-keepalive:0 fresh:1}; do
        for tls in off ec; do
          flags=(--n "$n" --duration "${DURATION:-30}" --warmup "${WARMUP:-35}" --fresh "${conn#*:}")
          [ "$tls" = off ] || flags+=(--tls "$tls")
          line=$(timeout 600 "$BIN/bench-volunteers" "${flags[@]}" "$@" 2>/dev/null |
                 grep '^volunteers:' || true)
          echo "${conn%:*} $tls: ${line:-no result}" >&2 # each run, for the record
          [ -n "$line" ] && out[${conn%:*}/$tls]+="$line"$'\n'
        done
      done
    done
    for conn in ${CONNS:-keepalive:0 fresh:1}; do
      conn=${conn%:*}
      for tls in off ec; do
        lines=${out[$conn/$tls]:-}
        if [ -z "$lines" ]; then echo "| $n | $conn | $tls | no run finished |"; continue; fi
        declare -A med=()
        for k in $ckeys; do med[$k]=$(printf '%s' "$lines" | field "$k" | median); done
        max_err=$(printf '%s' "$lines" | field errors | sort -g | tail -n 1)
        printf '| %s | %s | %s | %.0f | %.0f | %.2f | %.2f | %.2f | %s/%s | %.1f | %.1f | %s | %s | %.0f |\n' \
          "$n" "$conn" "$tls" "$(awk -v n="$n" 'BEGIN { print n / 30 }')" "${med[req_per_s]}" \
          "${med[p50_ms]}" "${med[p99_ms]}" "${med[p999_ms]}" "${med[errors]}" "$max_err" \
          "${med[master_cpu_pct]}" "${med[cpu_us_per_req]}" "${med[tls_full]}" \
          "${med[tls_resumed]}" "${med[reg_per_s]}"
      done
    done
  done
  echo "(median of $REPEAT runs per row, run interleaved; window ${DURATION:-30} s after a ${WARMUP:-35} s warm-up)"
  exit 0
fi
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
