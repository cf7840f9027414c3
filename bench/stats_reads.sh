#!/usr/bin/env bash
# What anonymous reads of GET /v1/stats cost the master, and /healthz's
# latency under them: 3,000 volunteers in 3,000 teams, 40 addresses reading
# the largest page (limit 1,000) 60 times each, within their limit
# (bench/stats_reads.c; docs/security.md, the limits table). REPEAT runs
# (default 3), each bounded (timeout 300 s), every process stopped by its run.
# usage: bench/stats_reads.sh BIN_DIR [bench-stats_reads flags]
set -eu
BIN=$(cd "${1:-build-release/bin}" && pwd)
shift || true
export CAIRN_BIN_DIR=$BIN
for _ in $(seq "${REPEAT:-3}"); do
  timeout 300 "$BIN/bench-stats_reads" "$@"
done
