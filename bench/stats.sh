#!/usr/bin/env bash
# The cost of one refresh of the credit standings (GET /v1/stats): a real
# SQLite store with 10^4 and 10^5 volunteers, read as the master reads it.
# usage: bench/stats.sh BIN_DIR [V ...]
set -eu
BIN=${1:-build-release/bin}
shift || true
"$BIN/bench-stats" "$@"
