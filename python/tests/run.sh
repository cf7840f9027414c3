#!/usr/bin/env bash
# run.sh NAME — one file of the Python package's tests (python/tests/test_NAME.py)
# under Debian's Python (/usr/bin/python3 -m pytest), as ctest python/NAME.
# What a file needs that is missing makes it exit 77 (skipped), naming the
# Debian package; scripts/install-deps.sh test installs them all.
set -eu
[ $# -eq 1 ] || { echo "usage: run.sh NAME" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
PY=/usr/bin/python3
skip() { echo "python/$1: skipped: $2 (scripts/install-deps.sh test installs it)"; exit 77; }
[ -x "$PY" ] || skip "$1" "no $PY: install python3"
need() { # need MODULE DEBIAN-PACKAGE
  "$PY" -c "import $1" 2> /dev/null || skip "$NAME" "$PY cannot import $1: install $2"
}
NAME=$1
need pytest python3-pytest
case "$NAME" in
  executor) need cloudpickle python3-cloudpickle ;;
  snakemake) need snakemake snakemake
             command -v snakemake > /dev/null || skip "$NAME" "no snakemake command: install snakemake" ;;
  package) need pip python3-pip ;;
esac
cd "$here"
exec "$PY" -m pytest -q -p no:cacheprovider -o console_output_style=classic "test_$NAME.py"
