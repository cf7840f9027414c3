#!/usr/bin/env bash
# ATAF cost (ns per phi and per phi^-1) and index growth; BIN is the release build's bin/.
set -eu
BIN=${1:-build-release/bin}
REPS=${REPS:-9}
"$BIN/bench-ataf" "$REPS"
