#!/usr/bin/env bash
# Planner speed and quality (seeds 000-003); BIN is the release build's bin/.
set -eu
BIN=${1:-build-release/bin}
here=$(cd "$(dirname "$0")" && pwd)
"$BIN"/bench-plan --svg "$here/plan-grid.svg" "${@:2}"
