#!/usr/bin/env bash
# check-layers.sh [SOURCE_DIR] — fails on an #include that goes against the
# layering rule of scripts/layers.txt (docs/architecture.md), naming the
# file, the line and the rule, and on a header under server/ over 400 lines. Run by make check (ctest: check_layers).
set -euo pipefail
src=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$src"
table=scripts/layers.txt
awk -v table="$table" '
  # Pass 1: the table. A line names a folder and the folders it may include.
  FNR == NR {
    if ($0 ~ /^[[:space:]]*(#|$)/) next
    folder = $1; order[folder] = ++n; names[n] = folder
    for (i = 2; i <= NF; i++) if ($i != "-") allow[folder, $i] = 1
    for (i = 2; i <= NF; i++) if ($i != "-" && !($i in order)) {
      printf "%s:%d: %s may include %s, which is not listed above it: the rule must be acyclic\n", table, FNR, folder, $i
      bad = 1
    }
    next
  }
  # Pass 2: every #include "..." of the project.
  /^[[:space:]]*#[[:space:]]*include[[:space:]]*"/ {
    match($0, /"[^"]+"/); inc = substr($0, RSTART + 1, RLENGTH - 2)
    if (inc ~ /^cairn\//) next                    # include/cairn: the public API
    file = FILENAME
    from = file; sub(/\/[^\/]*$/, "", from)       # the folder of the file
    to = inc;   sub(/\/[^\/]*$/, "", to)
    if (to == inc) next                           # "x.h": a header beside it
    if (to == from) next
    if (!(from in order)) {
      printf "%s:%d: includes %s, but %s is not in %s\n", file, FNR, inc, from, table; bad = 1; next
    }
    if (!((from, to) in allow)) {
      printf "%s:%d: includes %s: %s may not include %s (%s)\n", file, FNR, inc, from, to, table
      bad = 1
    }
  }
  END { exit bad }
' "$table" $(find common plan worker apps server cli examples -name '*.[ch]' 2>/dev/null | sort)
# A module's header says what it owns and offers; past 400 lines it is
# several modules (docs/architecture.md).
long=0
for h in $(find server -name '*.h' | sort); do
  n=$(wc -l < "$h")
  if [ "$n" -gt 400 ]; then
    echo "$h: $n lines: a header under server/ has at most 400 (split its module)"
    long=1
  fi
done
[ "$long" = 0 ] || exit 1
echo "check-layers: every #include follows $table; every header under server/ has at most 400 lines"
