#!/usr/bin/env bash
# Runs every benchmark with its default size; BIN is the release build's bin/.
# Not compare.sh (Cairn beside Work Queue), which installs Debian packages
# and is run by hand: bash bench/compare.sh build-release/bin
set -eu
BIN=${1:-build-release/bin}
here=$(cd "$(dirname "$0")" && pwd)
for b in "$here"/*.sh; do
  case "$(basename "$b")" in
    run-all.sh|dispatch-ab.sh) continue ;;  # dispatch-ab compares two builds
    compare.sh) continue ;;  # installs Work Queue packages: run by hand
    soak.sh) continue ;;  # minutes of kill -9: run by hand (make check runs a short one)
    dataflow.sh) continue ;;  # needs root and minutes of shaped links: run by hand
  esac
  echo "== $(basename "$b" .sh)"
  bash "$b" "$BIN"
done
