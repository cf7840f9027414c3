#!/usr/bin/env bash
# Runs each libFuzzer target of a CAIRN_FUZZ build for FUZZ_SECONDS seconds
# (make fuzz). Usage: scripts/fuzz.sh BUILD_DIR [TARGET...]
# A TARGET is named with or without its fuzz_ prefix (ataf or fuzz_ataf); an
# unknown name, or a target missing from BUILD_DIR/bin, is refused (exit 2)
# before any target runs.
# Each target starts from a copy of tests/fuzz/corpus/<target>/ in a
# temporary folder (the repository's corpus grows only by hand), with the
# dictionary tests/fuzz/<target>.dict when there is one; a crash
# input is kept in the working folder and named in the summary. Prints per
# target the executions, cov: and ft: it reached and whether it crashed;
# exits 1 when any target crashed. FUZZ_KEEP=1 keeps the working folder
# (corpora and logs) even when nothing crashed.
set -u
cd "$(dirname "$0")/.."
build=${1:?usage: scripts/fuzz.sh BUILD_DIR [TARGET...]}
shift
seconds=${FUZZ_SECONDS:-60}
known=()
for src in tests/fuzz/fuzz_*.c; do
  known+=("$(basename "$src" .c)")
done
# a target is named with or without its fuzz_ prefix (ataf, fuzz_ataf);
# every name is checked before anything runs
targets=()
for arg in "$@"; do
  t=fuzz_${arg#fuzz_}
  found=0
  for k in "${known[@]}"; do
    [ "$k" = "$t" ] && found=1
  done
  if [ $found -eq 0 ]; then
    echo "fuzz: no such target: $arg (targets: ${known[*]#fuzz_})" >&2
    exit 2
  fi
  targets+=("$t")
done
if [ ${#targets[@]} -eq 0 ]; then
  targets=("${known[@]}")
fi
for t in "${targets[@]}"; do
  if [ ! -x "$build/bin/$t" ]; then
    echo "fuzz: $t is not built: no $build/bin/$t (make fuzz builds it)" >&2
    exit 2
  fi
done
work=$(mktemp -d "${TMPDIR:-/tmp}/cairn-fuzz.XXXXXX")
echo "fuzz: ${#targets[@]} targets, ${seconds} s each, working folder $work"
failed=0
summary=""
for t in "${targets[@]}"; do
  name=${t#fuzz_}
  mkdir -p "$work/$name/corpus" "$work/$name/crashes"
  if [ -d "tests/fuzz/corpus/$name" ]; then
    cp -r "tests/fuzz/corpus/$name/." "$work/$name/corpus/"
  fi
  log="$work/$name/log"
  dict=()
  if [ -f "tests/fuzz/$name.dict" ]; then
    dict=(-dict="tests/fuzz/$name.dict")
  fi
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "$build/bin/$t" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 \
    -print_final_stats=1 -artifact_prefix="$work/$name/crashes/" ${dict[@]+"${dict[@]}"} \
    "$work/$name/corpus" \
    >"$log" 2>&1
  rc=$?
  # the last status line: "#N ... cov: C ft: F ..."
  last=$(grep -E '^#[0-9]+' "$log" | tail -n 1)
  execs=$(grep -E '^stat::number_of_executed_units' "$log" | awk '{print $2}')
  cov=$(echo "$last" | sed -n 's/.* cov: \([0-9]*\).*/\1/p')
  ft=$(echo "$last" | sed -n 's/.* ft: \([0-9]*\).*/\1/p')
  crash=$(ls "$work/$name/crashes" 2>/dev/null | head -n 1)
  if [ $rc -ne 0 ] || [ -n "$crash" ]; then
    failed=1
    verdict="CRASHED (exit $rc${crash:+, input $work/$name/crashes/$crash}; log $log)"
    grep -E 'ERROR: |SUMMARY: |runtime error' "$log" | head -n 5
  else
    verdict="no crash"
  fi
  line=$(printf '%-16s executions %-10s cov: %-6s ft: %-7s %s' "$t" "${execs:-?}" \
         "${cov:-?}" "${ft:-?}" "$verdict")
  echo "$line"
  summary+="$line"$'\n'
done
echo "fuzz: summary"
printf '%s' "$summary"
if [ $failed -eq 0 ] && [ "${FUZZ_KEEP:-0}" != 1 ]; then
  rm -rf "$work"
fi
exit $failed
