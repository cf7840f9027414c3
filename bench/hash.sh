#!/usr/bin/env bash
# SHA-256 and base64 throughput (bench-hash): libsodium called directly beside
# common/sha256.h and common/base64.h, alternately in one run: a 64 MiB file
# hashed in 64 KiB reads, 65,536 messages of 1 KiB, base64 of 1 MiB both
# ways; medians of REPS (default 9) and the ratio cairn/sodium.
# usage: bench/hash.sh BIN_DIR
set -eu
BIN=${1:-build-release/bin}
REPS=${REPS:-9}
"$BIN/bench-hash" --reps "$REPS"
