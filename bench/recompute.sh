#!/usr/bin/env bash
# How long a lost output's recompute holds the core's lock on a job of
# 10^5 tasks: the policy's reset in place against the rebuild it replaced
# (docs/ic-scheduling.md, section 7).
# usage: bench/recompute.sh BIN_DIR
set -eu
BIN=${1:-build-release/bin}
"$BIN/bench-recompute" --tasks 100000 --samples 15
