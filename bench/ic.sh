#!/usr/bin/env bash
# IC-scheduling evidence (docs/ic-scheduling.md): bench-ic's tables, then a
# 10^6-task job file (cairn gen mesh 1414) loaded by the job parser and
# scheduled by `cairn simulate game`, with wall time and peak memory.
# usage: bench/ic.sh BIN_DIR [SEEDS]
set -eu
BIN=${1:-build-release/bin}
SEEDS=${2:-7}
"$BIN/bench-ic" "$SEEDS"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo
echo "## 5. A 10^6-task job file: cairn gen mesh 1414, then cairn simulate game --policy ic"
"$BIN/cairn" gen mesh 1414 > "$tmp/mesh.json"
echo "job file: $(wc -c < "$tmp/mesh.json") bytes, $(grep -c '"id"' "$tmp/mesh.json") tasks"
start=$(date +%s.%N)
if [ -x /usr/bin/time ]; then
  /usr/bin/time -f "wall %e s, peak RSS %M KB (job parser and jansson tree included)" \
    "$BIN/cairn" simulate game "$tmp/mesh.json" --policy ic --json > "$tmp/out.json"
else
  "$BIN/cairn" simulate game "$tmp/mesh.json" --policy ic --json > "$tmp/out.json"
  echo "wall $(echo "$(date +%s.%N) - $start" | bc) s"
fi
grep -o '"area":[0-9]*' "$tmp/out.json"
