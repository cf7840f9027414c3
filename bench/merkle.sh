#!/usr/bin/env bash
# merkle.sh BIN — the audit log's cost: dispatch with the log's tree on and
# off, the audit chain on in both (bench-dispatch, callback app, 10^4 tasks,
# 8 workers, runs alternating on/off, the median of 3 each; the ratio of the
# medians), then bench-merkle at 10^7 leaves (LEAVES=N for another size):
# the start-up build of a chain without its tree (append rate, seconds per
# 10^6 leaves), bytes per leaf in the database, the write path with and
# without the tree, inclusion and consistency proofs' sizes and times.
set -eu
BIN=$(cd "${1:-build-release/bin}" && pwd)
export CAIRN_BIN_DIR=$BIN
LEAVES=${LEAVES:-10000000}
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
declare -A tps cpu
for _ in 1 2 3; do
  for tree in on off; do
    line=$("$BIN/bench-dispatch" --tasks 10000 --workers 8 --app callback \
             --audit-tree "$tree" 2>/dev/null | tail -n 1)
    tps[$tree]+="$(sed -n 's/.*tasks_per_s=\([0-9.]*\).*/\1/p' <<<"$line") "
    cpu[$tree]+="$(sed -n 's/.*master_cpu_us_per_task=\([0-9.]*\).*/\1/p' <<<"$line") "
  done
done
declare -A med
for tree in on off; do
  med[$tree]=$(tr ' ' '\n' <<<"${tps[$tree]}" | grep . | median)
  echo "dispatch: app=callback tasks=10000 workers=8 audit_chain=on audit_tree=$tree" \
       "tasks_per_s=${med[$tree]}" \
       "master_cpu_us_per_task=$(tr ' ' '\n' <<<"${cpu[$tree]}" | grep . | median)" \
       "(median of 3; runs: tasks_per_s ${tps[$tree]% }, cpu ${cpu[$tree]% })"
done
declare -A mcpu
for tree in on off; do mcpu[$tree]=$(tr ' ' '\n' <<<"${cpu[$tree]}" | grep . | median); done
awk -v on="${med[on]}" -v off="${med[off]}" -v con="${mcpu[on]}" -v coff="${mcpu[off]}" \
  'BEGIN { printf "dispatch: tree on / off = %.3f tasks_per_s, %.3f master_cpu_us_per_task\n",
           on / off, con / coff }'
"$BIN/bench-merkle" --leaves "$LEAVES"
