#!/usr/bin/env bash
# dispatch-ab.sh BIN_A BIN_B [TASKS] [RUNS] — the dispatch benchmark of two
# builds (for example a release build of main and one of a change), run
# alternately A, B, A, B ... on the same machine in the same session, so
# that load drifts touch both alike. Prints each build's median tasks/s and
# master CPU µs per task, for the exec and callback apps, and the ratio B/A.
# Default: 10,000 tasks, 5 runs each.
set -eu
A=$(cd "$1" && pwd)
B=$(cd "$2" && pwd)
N=${3:-10000}
RUNS=${4:-5}
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
field() { sed -n "s/.*$1=\([0-9.]*\).*/\1/p"; }
run() { # BIN APP -> "tps cpu"
  local line
  line=$(CAIRN_BIN_DIR=$1 "$1/bench-dispatch" --tasks "$N" --workers 8 --app "$2" 2>/dev/null |
         tail -n 1)
  echo "$(field tasks_per_s <<<"$line") $(field master_cpu_us_per_task <<<"$line")"
}
for app in exec callback; do
  ta=(); ca=(); tb=(); cb=()
  for _ in $(seq "$RUNS"); do
    read -r t c < <(run "$A" "$app"); ta+=("$t"); ca+=("$c")
    read -r t c < <(run "$B" "$app"); tb+=("$t"); cb+=("$c")
  done
  mta=$(printf '%s\n' "${ta[@]}" | median); mca=$(printf '%s\n' "${ca[@]}" | median)
  mtb=$(printf '%s\n' "${tb[@]}" | median); mcb=$(printf '%s\n' "${cb[@]}" | median)
  echo "dispatch-ab: app=$app tasks=$N workers=8 runs=$RUNS" \
       "A tasks_per_s=$mta master_cpu_us_per_task=$mca" \
       "B tasks_per_s=$mtb master_cpu_us_per_task=$mcb" \
       "B/A tasks_per_s=$(awk -v a="$mta" -v b="$mtb" 'BEGIN { printf "%.3f", b / a }')" \
       "cpu=$(awk -v a="$mca" -v b="$mcb" 'BEGIN { printf "%.3f", b / a }')"
done
