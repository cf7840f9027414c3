#!/usr/bin/env bash
# What the task sandbox costs each task (bench-sandbox): /bin/true run RUNS
# times (default 200) through the worker's runner directly and in the
# bubblewrap sandbox, taking turns; medians, percentiles and their ratio.
# usage: bench/sandbox.sh BIN_DIR
set -eu
BIN=${1:-build-release/bin}
RUNS=${RUNS:-200}
"$BIN/bench-sandbox" --runs "$RUNS"
