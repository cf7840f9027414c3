#!/usr/bin/env bash
# How long a work request that chooses a worker's source for a broadcast
# input takes as the file's holders grow from 10^3 to 10^5
# (docs/server.md, "What a request may cost under the core's lock").
# usage: bench/sources.sh BIN_DIR
set -eu
BIN=${1:-build-release/bin}
"$BIN/bench-sources" --holders 1000,10000,100000 --samples 30
