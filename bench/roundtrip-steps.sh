#!/usr/bin/env bash
# roundtrip-steps.sh BIN [TASKS] [--no-fsync] — where a serial round trip's
# time goes, step by step, and what this machine's floor for it is.
#
# Runs bench-roundtrip (TASKS round trips, default 400, 8 workers) under
# `perf record -a` with eleven syscall tracepoints (sendto, sendmsg,
# recvfrom's exit, pwrite64, fdatasync's entry and exit, vfork, execve,
# exit_group, wait4's exit: a few events per step; the traced run's round
# trip is about a fifth slower than an untraced one), then follows each round trip's chain through them,
# anchored on the exit of its /bin/true:
#   the client sends the submission; the master reads it; its commit's
#   first WAL write; the fsync begins; ends; the master answers (the offer
#   and the 201); the worker reads the offer; vforks; the child execs;
#   /bin/true exits; the worker has reaped it; sends the result; the master
#   reads it; WAL write; fsync; answers; the client reads "done".
# Prints the median of each step in ms, their total, then bench-floor's
# line (bench/floor.c: the same machine's cost of an fsync, a spawn and a
# loopback message alone). Needs perf (Debian: linux-perf) and the right to
# trace the whole system (root, or kernel.perf_event_paranoid <= -1);
# without them it says so and exits 0 having measured nothing.
set -eu
BIN=$(cd "${1:-build-release/bin}" && pwd)
TASKS=${2:-400}
NOFSYNC=${3:-}
case "$NOFSYNC" in ""|--no-fsync) ;; *) echo "usage: roundtrip-steps.sh BIN [TASKS] [--no-fsync]" >&2; exit 2 ;; esac
export CAIRN_BIN_DIR=$BIN
if ! command -v perf > /dev/null; then
  echo "roundtrip-steps: skipped: perf is not installed (Debian package linux-perf)"
  exit 0
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/cairn-steps-XXXXXX")
trap 'rm -rf "$work"' EXIT
ev=syscalls:sys_enter_sendto,syscalls:sys_enter_sendmsg,syscalls:sys_exit_recvfrom
ev=$ev,syscalls:sys_enter_pwrite64,syscalls:sys_enter_fdatasync,syscalls:sys_exit_fdatasync
ev=$ev,syscalls:sys_enter_vfork,syscalls:sys_enter_execve,syscalls:sys_enter_exit_group
ev=$ev,syscalls:sys_exit_wait4
if ! perf record -q -a -e "$ev" -o "$work/perf.data" -- \
    "$BIN/bench-roundtrip" --tasks "$TASKS" --workers 8 ${NOFSYNC:+"$NOFSYNC"} > "$work/rt.txt" \
    2> "$work/err.txt"; then
  if grep -q -i "permission\|paranoid\|access" "$work/err.txt"; then
    echo "roundtrip-steps: skipped: not allowed to trace the system (run as root)"
    exit 0
  fi
  cat "$work/err.txt" >&2
  exit 1
fi
echo "traced: $(tail -n 1 "$work/rt.txt")"
fsync=1
[ -n "$NOFSYNC" ] && fsync=0
perf script -i "$work/perf.data" -F comm,time,event 2> /dev/null | awk -v fsync="$fsync" '
function who(c) {
  if (c ~ /^bench/) return "bench"
  if (c ~ /^MHD/ || c == "cairn-server") return "srv"
  if (c == "cairn-worker") return "wrk"
  if (c == "true") return "true"
  return "other"
}
function back(k, w, e) { for (k--; k > 0 && k > lo; k--) if (W[k] == w && E[k] == e) return k; return 0 }
function fwd(k, w, e) { for (k++; k <= n && k < hi; k++) if (W[k] == w && E[k] == e) return k; return 0 }
function isort(v, m,   i, j, x) {
  for (i = 2; i <= m; i++) { x = v[i]; for (j = i - 1; j > 0 && v[j] > x; j--) v[j + 1] = v[j]; v[j + 1] = x }
}
function step(name, k) { if (!k) ok = 0; S[ns] = name; K[ns++] = k }
{
  t = $(NF - 1); sub(/:$/, "", t); e = $NF; sub(/:$/, "", e); sub(/^syscalls:/, "", e)
  n++; T[n] = t; W[n] = who($1); E[n] = e
}
END {
  for (a = 1; a <= n; a++) {
    if (W[a] != "true" || E[a] != "sys_enter_exit_group") continue
    lo = a - 4000; hi = a + 4000; ok = 1; ns = 0
    ex = back(a, "wrk", "sys_enter_execve"); vf = back(ex, "wrk", "sys_enter_vfork")
    of = back(vf, "wrk", "sys_exit_recvfrom"); an = back(of, "srv", "sys_enter_sendmsg")
    if (fsync) { fe = back(an, "srv", "sys_exit_fdatasync"); fs = back(fe, "srv", "sys_enter_fdatasync") }
    else fs = an
    rd = back(fs, "srv", "sys_exit_recvfrom"); wl = fwd(rd, "srv", "sys_enter_pwrite64")
    sb = back(rd, "bench", "sys_enter_sendto")
    step("client sends the submission", sb); step("master reads it", rd)
    step("first WAL write", wl)
    if (fsync) { step("fsync begins", fs); step("fsync ends", fe) }
    step("master answers (offer, 201)", an); step("worker reads the offer", of)
    step("worker vforks", vf); step("child execs /bin/true", ex); step("/bin/true exits", a)
    wt = fwd(a, "wrk", "sys_exit_wait4"); rs = fwd(wt, "wrk", "sys_enter_sendto")
    rr = fwd(rs, "srv", "sys_exit_recvfrom"); w2 = fwd(rr, "srv", "sys_enter_pwrite64")
    step("worker reaps it", wt); step("worker sends the result", rs)
    step("master reads it", rr); step("first WAL write", w2)
    if (fsync) {
      f2 = fwd(w2, "srv", "sys_enter_fdatasync"); g2 = fwd(f2, "srv", "sys_exit_fdatasync")
      step("fsync begins", f2); step("fsync ends", g2); last = g2
    } else last = w2
    a2 = fwd(last, "srv", "sys_enter_sendmsg"); dn = fwd(a2, "bench", "sys_exit_recvfrom")
    step("master answers", a2); step("client reads \"done\"", dn)
    if (!ok) continue
    for (i = 1; i < ns; i++) if (T[K[i]] < T[K[i - 1]]) ok = 0
    if (!ok) continue
    m++
    for (i = 1; i < ns; i++) D[i, m] = (T[K[i]] - T[K[i - 1]]) * 1000
    D[0, m] = (T[K[ns - 1]] - T[K[0]]) * 1000
  }
  if (!m) { print "roundtrip-steps: no round trip could be followed"; exit 1 }
  printf "round trips followed: %d; median ms of each step:\n", m
  for (i = 0; i < ns; i++) {
    for (j = 1; j <= m; j++) v[j] = D[i, j]
    isort(v, m)
    med = v[int((m + 1) / 2)]
    if (i == 0) total = med
    else printf "  %-30s %7.3f\n", S[i], med
    delete v
  }
  printf "  %-30s %7.3f\n", "total (median of the sums)", total
}'
"$BIN/bench-floor" | tail -n 1
