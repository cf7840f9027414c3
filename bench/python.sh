#!/usr/bin/env bash
# python.sh BIN — what the cairn Python package costs (bench/python.py): the
# Executor's no-op calls a second through 8 workers of one slot (median of
# 3 runs of 400), beside a job of as many /bin/echo tasks on the same
# workers (what the calls cost without Python), and the round trip of a
# single-task job (submit, wait) by the package against the cairn
# command's, taking turns (medians of 30). Prints
#   executor: calls=N workers=K per_s=X ms_per_call=Y (median of 3)
#   echo: tasks=N workers=K per_s=X ms_per_task=Y (median of 3)
#   roundtrip: trips=R package_p50_ms=P cli_p50_ms=C package/cli=Q
# usage: bench/python.sh BIN_DIR   (Debian's /usr/bin/python3)
set -eu
BIN=$(cd "${1:-build-release/bin}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
[ -x /usr/bin/python3 ] || { echo "python bench: no /usr/bin/python3: install python3" >&2; exit 1; }
[ -x "$BIN/cairn-app-python" ] || { echo "python bench: no $BIN/cairn-app-python: build first" >&2; exit 1; }
exec /usr/bin/python3 "$here/python.py" "$BIN" --calls "${PY_CALLS:-400}" \
  --workers "${PY_WORKERS:-8}" --trips "${PY_TRIPS:-30}"
