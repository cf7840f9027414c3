#!/usr/bin/env bash
# What planning a broadcast costs a work request under the core's lock as
# the volunteers grow (server/dist/census.c, distribution.c ensure_plan).
# usage: bench/census.sh BIN_DIR [V ...]
set -eu
BIN=${1:-build-release/bin}
shift || true
"$BIN/bench-census" "$@"
