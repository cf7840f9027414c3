#!/usr/bin/env bash
# Runs every benchmark with its default size; BIN is the release build's bin/.
set -eu
BIN=${1:-build-release/bin}
here=$(cd "$(dirname "$0")" && pwd)
for b in "$here"/*.sh; do
  [ "$(basename "$b")" = run-all.sh ] && continue
  echo "== $(basename "$b" .sh)"
  bash "$b" "$BIN"
done
