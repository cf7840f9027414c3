#!/usr/bin/env bash
# Planner speed and quality ([KKW], [WYL], [BSM], [Gon]: docs/references.md); BIN is the release build's bin/.
set -eu
BIN=${1:-build-release/bin}
here=$(cd "$(dirname "$0")" && pwd)
"$BIN"/bench-plan --svg "$here/plan-grid.svg" "${@:2}"
