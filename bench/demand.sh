#!/usr/bin/env bash
# GET /v1/demand's cost as tasks and volunteers grow (server/core/demand.h).
# usage: bench/demand.sh BIN_DIR
set -eu
BIN=${1:-build-release/bin}
"$BIN/bench-demand"
