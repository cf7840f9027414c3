#!/usr/bin/env bash
# The cost of the public pages' rendering (GET /v1/public/top/{kind},
# /v1/public/home): one build at 10^4 and 10^5 accounts, each with a host,
# in teams of 20; the longest hold of the core's lock by one slice of the
# build; one page; the rendering's size (server/api/ranks.h).
# usage: bench/ranks.sh BIN_DIR [A ...]
set -eu
BIN=${1:-build-release/bin}
shift || true
"$BIN/bench-ranks" "$@"
