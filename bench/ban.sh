#!/usr/bin/env bash
# The longest hold of the core's lock during the ban of a volunteer with
# 10^5 results: all under one hold against slices of 256 (server/core/ban.c;
# docs/server.md, "What a request may cost under the core's lock").
# usage: bench/ban.sh BIN_DIR
set -eu
BIN=${1:-build-release/bin}
"$BIN/bench-ban" --results 100000 --jobs 4 --slice 256 --samples 3
