#!/usr/bin/env bash
# compare.sh BIN [BAG_TASKS] [RT_TASKS] — Cairn side by side with Work Queue
# (Debian's coop-computing-tools) on this machine, run by hand:
#   bash bench/compare.sh build-release/bin
# Installs coop-computing-tools and coop-computing-tools-dev when dpkg says
# they are missing (apt-get, as root), so bench/run-all.sh does not run it.
#
# Two workloads, 8 workers each, one task at a time per worker:
#   bag        BAG_TASKS (default 10,000) no-op tasks (/bin/true): Cairn's
#              bench-dispatch --app exec (8 cairn-worker processes) against
#              bench/wq_bench.c (8 work_queue_worker processes); Cairn's
#              embedded callback workers (--app callback) as an extra line
#   roundtrip  RT_TASKS (default 500) times: submit one /bin/true task, wait
#              for its result: bench-roundtrip against wq_bench roundtrip;
#              Cairn's round trip again with --no-fsync as an extra line
#              (its commits then survive a kill of the master, not a crash
#              of the machine; Work Queue keeps its queue in memory)
# Three rounds, interleaved (Cairn, Work Queue, Cairn, Work Queue ...) so that
# load drifts touch both alike; prints each run, the medians per system and
# the ratio Cairn/WQ (above 1: Cairn is faster), ending with
#   compare: bag tasks=N workers=8 cairn_per_s=X wq_per_s=Y ratio=R
#   compare: roundtrip tasks=N workers=8 cairn_per_s=X wq_per_s=Y ratio=R
#   compare: roundtrip-nofsync tasks=N workers=8 cairn_per_s=X wq_per_s=Y ratio=R
# COMPARE_WQ_BAG=bag queues Work Queue's whole bag before its workers start,
# as Cairn's job does; the default (bag-fed) keeps its queue topped up with
# work_queue_hungry(), the way its manual recommends and its faster one.
# Every run is bounded (COMPARE_TIMEOUT seconds, default 600, then killed
# with the processes it started); scratch files live in one temporary
# folder, removed on exit. Exits 1 when a run fails, 2 when the roundtrip
# row had to be skipped (the figures above it still stand).
set -eu
BIN=$(cd "${1:-build-release/bin}" && pwd)
BAG=${2:-10000}
RT=${3:-500}
K=8
ROUNDS=3
WQ_BAG=${COMPARE_WQ_BAG:-bag-fed}
RUN_TIMEOUT=${COMPARE_TIMEOUT:-600}
here=$(cd "$(dirname "$0")" && pwd)
die() { echo "compare: $*" >&2; exit 1; }
case "$WQ_BAG" in bag|bag-fed) ;; *) die "COMPARE_WQ_BAG is bag or bag-fed" ;; esac
[ -x "$BIN/bench-dispatch" ] || die "$BIN/bench-dispatch is missing (make release)"

# Work Queue from Debian, installed only when missing.
pkgs=(coop-computing-tools coop-computing-tools-dev)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  [ "$(id -u)" = 0 ] || die "needs root to install ${missing[*]}"
  echo "compare: installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
wq_header=$(dpkg -L coop-computing-tools-dev | grep '/work_queue\.h$' | head -n 1)
wq_lib=$(dpkg -L coop-computing-tools-dev | grep '/libwork_queue\.a$' | head -n 1)
dt_lib=$(dpkg -L coop-computing-tools-dev | grep '/libdttools\.a$' | head -n 1)
command -v work_queue_worker >/dev/null || die "work_queue_worker not on PATH"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/cairn-compare-XXXXXX")
child=""
cleanup() {
  if [ -n "$child" ]; then
    kill -TERM "$child" 2>/dev/null || true
    wait "$child" 2>/dev/null || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
# the benchmarks' own temporary folders land inside ours
export TMPDIR=$tmp CAIRN_BIN_DIR=$BIN

cc -O2 -std=c11 -Wall -Wextra -I"$(dirname "$wq_header")" "$here/wq_bench.c" -o "$tmp/wq_bench" \
   "$wq_lib" "$dt_lib" -lm -lz

# run NAME FIELD CMD... : runs CMD bounded by RUN_TIMEOUT (timeout(1) ends
# CMD's whole process group: servers, workers), sets val to FIELD= of its
# last line. Runs in the background so that INT/TERM reach our trap at once.
val=""
run() {
  local name=$1 field=$2 rc=0
  shift 2
  timeout -k 10 "$RUN_TIMEOUT" "$@" >"$tmp/out" 2>"$tmp/err" &
  child=$!
  wait "$child" || rc=$?
  child=""
  if [ "$rc" != 0 ]; then
    [ "$rc" = 124 ] && echo "compare: $name timed out after ${RUN_TIMEOUT}s" >&2 \
                    || echo "compare: $name failed (exit $rc)" >&2
    tail -n 5 "$tmp/err" >&2
    exit 1
  fi
  val=$(tail -n 1 "$tmp/out" | sed -n "s/.* $field=\([0-9.]*\).*/\1/p")
  [ -n "$val" ] || { echo "compare: $name printed no $field=" >&2; cat "$tmp/out" >&2; exit 1; }
  printf "  %-22s %s\n" "$name" "$(tail -n 1 "$tmp/out")"
}

have_rt=1
if [ ! -x "$BIN/bench-roundtrip" ]; then
  have_rt=0
  echo "compare: $BIN/bench-roundtrip is missing: the roundtrip row will be skipped"
fi
echo "compare: bag_tasks=$BAG roundtrip_tasks=$RT workers=$K rounds=$ROUNDS wq_bag=$WQ_BAG" \
     "cores=$(nproc) load_before=$(cut -d' ' -f1-3 /proc/loadavg)"
ce=(); cc=(); wb=(); cr=(); cn=(); wr=()
for r in $(seq "$ROUNDS"); do
  echo "round $r"
  run "cairn bag (exec)" tasks_per_s "$BIN/bench-dispatch" --tasks "$BAG" --workers "$K" --app exec
  ce+=("$val")
  run "wq bag ($WQ_BAG)" per_s "$tmp/wq_bench" "$WQ_BAG" "$BAG" "$K"
  wb+=("$val")
  run "cairn bag (callback)" tasks_per_s \
      "$BIN/bench-dispatch" --tasks "$BAG" --workers "$K" --app callback
  cc+=("$val")
  if [ "$have_rt" = 1 ]; then
    run "cairn roundtrip" per_s "$BIN/bench-roundtrip" --tasks "$RT" --workers "$K"
    cr+=("$val")
    run "wq roundtrip" per_s "$tmp/wq_bench" roundtrip "$RT" "$K"
    wr+=("$val")
    run "cairn roundtrip (no fsync)" per_s "$BIN/bench-roundtrip" --tasks "$RT" --workers "$K" --no-fsync
    cn+=("$val")
  fi
done

median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
mce=$(median "${ce[@]}"); mcc=$(median "${cc[@]}"); mwb=$(median "${wb[@]}")
echo "load_after=$(cut -d' ' -f1-3 /proc/loadavg); medians of $ROUNDS, tasks per second:"
printf '  %-28s %10s %10s %9s\n' "" cairn wq cairn/wq
printf '  %-28s %10s %10s %9s\n' "bag $BAG, exec /bin/true" "$mce" "$mwb" "$(ratio "$mce" "$mwb")"
printf '  %-28s %10s %10s %9s\n' "bag $BAG, cairn callback" "$mcc" "-" "-"
if [ "$have_rt" = 1 ]; then
  mcr=$(median "${cr[@]}"); mwr=$(median "${wr[@]}"); mcn=$(median "${cn[@]}")
  printf '  %-28s %10s %10s %9s\n' "roundtrip $RT, /bin/true" "$mcr" "$mwr" "$(ratio "$mcr" "$mwr")"
  printf '  %-28s %10s %10s %9s\n' "roundtrip $RT, no fsync" "$mcn" "$mwr" "$(ratio "$mcn" "$mwr")"
fi
echo "compare: bag tasks=$BAG workers=$K cairn_per_s=$mce wq_per_s=$mwb" \
     "ratio=$(ratio "$mce" "$mwb") wq_mode=$WQ_BAG"
echo "compare: bag-callback tasks=$BAG workers=$K cairn_per_s=$mcc" \
     "(Cairn only: embedded callback workers)"
if [ "$have_rt" = 1 ]; then
  echo "compare: roundtrip tasks=$RT workers=$K cairn_per_s=$mcr wq_per_s=$mwr" \
       "ratio=$(ratio "$mcr" "$mwr")"
  echo "compare: roundtrip-nofsync tasks=$RT workers=$K cairn_per_s=$mcn wq_per_s=$mwr" \
       "ratio=$(ratio "$mcn" "$mwr")"
else
  echo "compare: roundtrip SKIPPED: $BIN/bench-roundtrip is missing (bench/roundtrip.c, the Cairn" \
       "round-trip benchmark, is not in this build)"
  exit 2
fi
