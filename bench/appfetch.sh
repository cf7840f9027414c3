#!/usr/bin/env bash
# The time a worker takes to fetch and verify a signed app version of MIB MiB
# (default 20) from a real cairn-server on loopback (bench-appfetch): cold (a
# fresh worker DIR), warm (stored and unchanged: before every later task) and
# rehash (stored, after a worker's restart); medians of REPS (default 9).
# usage: bench/appfetch.sh BIN_DIR
set -eu
BIN=${1:-build-release/bin}
REPS=${REPS:-9}
MIB=${MIB:-20}
CAIRN_BIN_DIR=$BIN "$BIN/bench-appfetch" --reps "$REPS" --mib "$MIB"
