#!/usr/bin/env bash
# check-links.sh BUILD_DIR [SOURCE_DIR] — the layering rule of
# scripts/layers.txt at link time: every function or variable an object of
# the libraries uses from another folder of the project is defined in a
# folder its folder may include. The include check (check-layers.sh) sees
# declarations; this one sees calls, such as a function declared in a
# lower folder's header but defined in a higher one. Run by make check
# (ctest: lint/links) on the objects of the build.
set -euo pipefail
build=$1
src=${2:-$(cd "$(dirname "$0")/.." && pwd)}
table=$src/scripts/layers.txt
list=$(mktemp)
trap 'rm -f "$list"' EXIT
# "folder object" for each object whose source still exists
for lib in cairn_common_obj cairn_plan_obj cairn_worker_obj cairn_master_obj; do
  dir=$build/CMakeFiles/$lib.dir
  [ -d "$dir" ] || continue
  while IFS= read -r o; do
    rel=${o#"$dir"/}
    [ -f "$src/${rel%.o}" ] || continue
    folder=${rel%/*}
    echo "$folder $o"
  done < <(find "$dir" -name '*.c.o' | sort)
done > "$list"
[ -s "$list" ] || { echo "check-links: no objects under $build (build it first)"; exit 1; }
# one line a symbol: "D folder symbol" for a definition, "U folder symbol object" for a use
while read -r folder o; do
  nm "$o" | awk -v f="$folder" -v o="${o##*/}" '
    $1 == "U" { print "U", f, $2, o; next }
    NF == 3 && $2 ~ /^[TDBR]$/ { print "D", f, $3 }'
done < "$list" | awk -v table="$table" '
  FNR == NR {
    if ($0 ~ /^[[:space:]]*(#|$)/) next
    for (i = 2; i <= NF; i++) if ($i != "-") allow[$1, $i] = 1
    next
  }
  $1 == "D" { def[$3] = $2; next }
  $1 == "U" { use[++n] = $0 }
  END {
    for (i = 1; i <= n; i++) {
      split(use[i], u, " ")
      d = def[u[3]]
      if (d == "" || d == u[2] || ((u[2], d) in allow)) continue
      printf "%s/%s: uses %s, defined in %s: %s may not use %s (scripts/layers.txt)\n", u[2], u[4], u[3], d, u[2], d
      bad = 1
    }
    exit bad
  }' "$table" -
echo "check-links: every use across folders follows scripts/layers.txt"
