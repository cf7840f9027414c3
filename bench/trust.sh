#!/usr/bin/env bash
# Adaptive replication (docs/accountability.md, "Adaptive replication"):
# copies a task with and without it, a liar's lies until its trust resets,
# and lies left accepted at the end, for a liar that always lies and one
# that lies on 30% of its tasks.
# usage: bench/trust.sh BIN_DIR
set -eu
BIN=${1:-build-release/bin}
"$BIN/bench-trust"
"$BIN/bench-trust" --lie 0.3
