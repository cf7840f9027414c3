#!/bin/sh
# first_line_validator.sh [--slow] DIR1 DIR2 — a command validator for the
# tests (docs/jobs.md, "Validators"): two results agree (exit 0) when the
# first lines of their outputs are equal, else not (exit 1). With --slow it
# first sleeps past any test's timeout (the master must kill it).
if [ "$1" = "--slow" ]; then
  sleep 3600
  shift
fi
a=$(head -n 1 "$1/stdout") || exit 2
b=$(head -n 1 "$2/stdout") || exit 2
[ "$a" = "$b" ]
