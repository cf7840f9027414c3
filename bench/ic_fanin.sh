#!/usr/bin/env bash
# ic_fanin.sh BIN — the wide fan-in dag (R = 4,096 roots, K = 1,000 children
# listing every root) submitted to a real master under the "ic" and "fifo"
# policies: submit time, the worst /healthz answer during the submission,
# the first 1,000 allocations and their p50/p99 latency.
set -eu
BIN=$(cd "${1:-build-release/bin}" && pwd)
export CAIRN_BIN_DIR=$BIN
for policy in ic fifo; do
  "$BIN/bench-ic_fanin" --roots 4096 --children 1000 --allocs 1000 --policy "$policy" 2>/dev/null
done
