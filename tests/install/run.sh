#!/usr/bin/env bash
# run.sh BUILD_DIR — the install test: installs the build tree into a
# temporary prefix and checks what a program using the installed Cairn sees.
#
#  1. cmake --install BUILD_DIR --prefix TMP; every expected file is there.
#  2. The shared libraries have a versioned SONAME and export only the
#     functions of the public headers; libcairn-worker holds no planning
#     code (plan/: no planner, IC, policy, DAG, ATAF or job file symbol).
#  3. examples/embed_master.c and examples/embed_worker.c are built against
#     TMP twice: with pkg-config (cairn-master, cairn-worker) and with a CMake
#     project using find_package(Cairn) (tests/install/consumer), with the
#     build's sanitizer flags; each resolves the libraries from TMP.
#  4. They run: each embed_master on its own; a pkg-config embed_master
#     serving a CMake-built embed_worker; the installed cairn-server (with the
#     installed dashboard) and cairn command with a pkg-config embed_worker.
#
# Everything lives under one temporary folder, removed at the end; every
# process started is bounded by `timeout` and stopped at the end. Prints
# "install: OK" last; anything else exits non-zero with the reason.
set -euo pipefail
export LC_ALL=C
[ $# -eq 1 ] || { echo "usage: run.sh BUILD_DIR" >&2; exit 2; }
BUILD=$(cd "$1" && pwd)
SRC=$(cd "$(dirname "$0")/../.." && pwd)
ENV_FILE=$BUILD/install-test.env
[ -f "$ENV_FILE" ] || { echo "install: FAILED: $ENV_FILE is missing (configure first)" >&2; exit 1; }
# shellcheck source=/dev/null
. "$ENV_FILE"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/cairn-install-XXXXXX")
PREFIX=$WORK/prefix
LIB=$PREFIX/$CAIRN_LIBDIR
pids=()
cleanup() {
  local rc=$?
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
  [ $rc -eq 0 ] || echo "install: FAILED (exit $rc)" >&2
}
trap cleanup EXIT

fail() {
  echo "install: FAILED: $*" >&2
  exit 1
}
step() { echo "== $*"; }
# show FILE...: the files, for the reader of a failure.
show() {
  local f
  for f in "$@"; do
    [ -f "$f" ] && { echo "--- ${f#"$WORK"/}"; tail -n 40 "$f"; }
  done
  return 0
}
# wait_line FILE REGEX PID: until FILE has a line matching REGEX (30 s at most,
# and only while PID lives).
wait_line() {
  local i
  for i in $(seq 300); do
    grep -qE "$2" "$1" 2>/dev/null && return 0
    kill -0 "$3" 2>/dev/null || break
    sleep 0.1
  done
  grep -qE "$2" "$1" 2>/dev/null
}

# --- 1. install ---------------------------------------------------------------
step "cmake --install into a temporary prefix"
timeout 120 "$CMAKE" --install "$BUILD" --prefix "$PREFIX" > "$WORK/install.log" 2>&1 \
  || { show "$WORK/install.log"; fail "cmake --install failed"; }
echo "installed $(find "$PREFIX" -type f | wc -l) files, $(find "$PREFIX" -type l | wc -l) links"

need() { [ -e "$PREFIX/$1" ] || fail "not installed: $1"; }
for b in cairn-server cairn-worker cairn; do
  need "$CAIRN_BINDIR/$b"
  [ -x "$PREFIX/$CAIRN_BINDIR/$b" ] || fail "not executable: $CAIRN_BINDIR/$b"
done
for l in cairn-master cairn-worker; do
  need "$CAIRN_LIBDIR/lib$l.so"
  need "$CAIRN_LIBDIR/lib$l.so.$CAIRN_SOVERSION"
  need "$CAIRN_LIBDIR/lib$l.so.$CAIRN_VERSION"
  need "$CAIRN_LIBDIR/pkgconfig/$l.pc"
done
for f in CairnConfig.cmake CairnConfigVersion.cmake CairnTargets.cmake; do
  need "$CAIRN_LIBDIR/cmake/Cairn/$f"
done
nheaders=0
for h in "$SRC"/include/cairn/*.h; do
  need "$CAIRN_INCLUDEDIR/cairn/${h##*/}"
  cmp -s "$h" "$PREFIX/$CAIRN_INCLUDEDIR/cairn/${h##*/}" || fail "${h##*/} differs once installed"
  nheaders=$((nheaders + 1))
done
for s in "$SRC"/schema/*.sql; do need "$CAIRN_DATADIR/schema/${s##*/}"; done
while read -r w; do
  need "$CAIRN_DATADIR/web/${w#./}"
done < <(cd "$SRC/web" && find . -type f)
[ -x "$PREFIX/$CAIRN_BINDIR/cairn-app-python" ] || fail "not installed: $CAIRN_BINDIR/cairn-app-python"
for p in "$SRC"/python/cairn/*.py; do
  need "$CAIRN_PYTHONDIR/cairn/${p##*/}"
done
for c in submit status cancel; do
  [ -x "$PREFIX/$CAIRN_DATADIR/snakemake/cairn/cairn-$c" ] \
    || fail "not installed or not executable: $CAIRN_DATADIR/snakemake/cairn/cairn-$c"
done
need "$CAIRN_DATADIR/snakemake/cairn/config.yaml"
echo "binaries, libraries, $nheaders headers, schema, web files, .pc files, CMake package," \
     "the Python runner, package and Snakemake profile: present"

# --- 2. the shared libraries ------------------------------------------------------
step "SONAME and exported symbols"
# The names declared by the headers a library implements (its own and the
# shared ones: every header but the other library's).
declared() {
  local other=$1 h
  for h in "$PREFIX/$CAIRN_INCLUDEDIR"/cairn/*.h; do
    [ "${h##*/}" = "$other" ] || grep -oE '\bcairn_[a-z0-9_]+' "$h"
  done | sort -u
}
check_lib() {
  local name=$1 own=$2 other=$3 so soname exported required extra missing
  so=$LIB/lib$name.so.$CAIRN_SOVERSION
  soname=$(readelf -d "$so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
  [ "$soname" = "lib$name.so.$CAIRN_SOVERSION" ] || fail "lib$name: SONAME is '$soname'"
  exported=$(nm -D --defined-only "$so" | awk '{ print $NF }' | sort -u)
  # Every function declared at the start of a line of its headers.
  required=$(for h in "$PREFIX/$CAIRN_INCLUDEDIR"/cairn/*.h; do
               [ "${h##*/}" = "$other" ] || grep -oE '^[A-Za-z].*\bcairn_[a-z0-9_]+\(' "$h"
             done | grep -oE 'cairn_[a-z0-9_]+\($' | tr -d '(' | sort -u)
  echo "$required" | grep -q "^cairn_${own%.h}_" || fail "no function of $own found"
  extra=$(comm -23 <(echo "$exported") <(declared "$other"))
  missing=$(comm -13 <(echo "$exported") <(echo "$required"))
  [ -z "$extra" ] || fail "lib$name exports names that no public header declares:" $extra
  [ -z "$missing" ] || fail "lib$name does not export:" $missing
  echo "lib$name.so: SONAME $soname, $(echo "$exported" | wc -l) symbols exported, all public"
}
check_lib cairn-master master.h worker.h
check_lib cairn-worker worker.h master.h

step "no planning code in libcairn-worker"
# plan/ (planners, IC scheduling, policies, DAGs and generators, the
# simulator, job files, validators, ATAF) is linked into the master only.
# Every symbol of the library, local ones included (nm, not nm -D): its own
# cairn__ names and the static functions of plan/ that follow its naming.
PLAN_RE='(^|[._])(plan|ic|policy|bcast|dag|ataf|jobspec|validator)_|_(dag|ataf|jobspec|policy)$'
PLAN_RE+='|cairn__(gen|sim)_|cairn__(rand64|numeric_agree)$'
plan_symbols() {
  local so=$LIB/lib$1.so.$CAIRN_SOVERSION all
  all=$(nm "$so" | awk '{ print $NF }' | sort -u)
  [ "$(echo "$all" | grep -c '^cairn_')" -gt 0 ] || fail "lib$1: nm shows no symbol table"
  echo "$all" | grep -E "$PLAN_RE" || true
}
# The master does carry them: the pattern is not blind.
nplan=$(plan_symbols cairn-master | wc -l)
[ "$nplan" -gt 0 ] || fail "libcairn-master: no planning symbol found; is the pattern wrong?"
leaked=$(plan_symbols cairn-worker)
[ -z "$leaked" ] || fail "libcairn-worker carries planning code (plan/):" $leaked
echo "libcairn-master: $nplan planning symbols; libcairn-worker: none"

# --- 3. build the examples against the prefix ------------------------------------
read -r -a SAN <<< "${CAIRN_SANITIZE_FLAGS:-}"
echo "sanitizer flags: ${CAIRN_SANITIZE_FLAGS:-none}"
# uses_prefix EXE: the loader takes both Cairn libraries from the prefix.
uses_prefix() {
  local out
  out=$(ldd "$1")
  echo "$out" | grep -q "libcairn-worker.so.$CAIRN_SOVERSION => $LIB/" \
    || { echo "$out"; fail "${1##*/} does not load libcairn-worker from the prefix"; }
  if echo "$out" | grep -q libcairn-master; then
    echo "$out" | grep -q "libcairn-master.so.$CAIRN_SOVERSION => $LIB/" \
      || { echo "$out"; fail "${1##*/} does not load libcairn-master from the prefix"; }
  fi
}

step "build with pkg-config"
export PKG_CONFIG_PATH=$LIB/pkgconfig
for m in cairn-master cairn-worker; do
  v=$(pkg-config --modversion "$m") || fail "pkg-config does not find $m"
  [ "$v" = "$CAIRN_VERSION" ] || fail "$m: pkg-config version $v, expected $CAIRN_VERSION"
done
echo "pkg-config --cflags --libs cairn-worker: $(pkg-config --cflags --libs cairn-worker)"
case " $(pkg-config --cflags --libs cairn-master) " in
  *" -I$PREFIX/$CAIRN_INCLUDEDIR "*" -L$LIB "*) ;;
  *) fail "cairn-master.pc does not point into the prefix: $(pkg-config --cflags --libs cairn-master)" ;;
esac
PC=$WORK/pc
mkdir -p "$PC"
# shellcheck disable=SC2046 # pkg-config prints several words
timeout 120 "$CAIRN_CC" "${SAN[@]}" -Wall -Wextra -Werror -o "$PC/embed_worker" \
  "$SRC/examples/embed_worker.c" $(pkg-config --cflags --libs cairn-worker) \
  -Wl,-rpath,"$LIB" > "$PC/build.log" 2>&1 \
  || { show "$PC/build.log"; fail "embed_worker.c does not build with pkg-config"; }
# shellcheck disable=SC2046
timeout 120 "$CAIRN_CC" "${SAN[@]}" -Wall -Wextra -Werror -pthread -o "$PC/embed_master" \
  "$SRC/examples/embed_master.c" $(pkg-config --cflags --libs cairn-master cairn-worker jansson) \
  -Wl,-rpath,"$LIB" >> "$PC/build.log" 2>&1 \
  || { show "$PC/build.log"; fail "embed_master.c does not build with pkg-config"; }
uses_prefix "$PC/embed_worker"
uses_prefix "$PC/embed_master"
echo "built embed_master and embed_worker"
unset PKG_CONFIG_PATH

step "build with find_package(Cairn)"
CM=$WORK/cmake
timeout 120 "$CMAKE" -S "$SRC/tests/install/consumer" -B "$CM" \
  -DCMAKE_BUILD_TYPE=Debug -DCMAKE_PREFIX_PATH="$PREFIX" \
  -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCMAKE_C_COMPILER="$CAIRN_CC" \
  -DCMAKE_C_FLAGS="${CAIRN_SANITIZE_FLAGS:-} -Wall -Wextra -Werror" \
  -DCMAKE_EXE_LINKER_FLAGS="${CAIRN_SANITIZE_FLAGS:-}" \
  -DCAIRN_EXAMPLES="$SRC/examples" -DCAIRN_EXPECT_VERSION="$CAIRN_VERSION" \
  > "$WORK/cmake.log" 2>&1 || { show "$WORK/cmake.log"; fail "find_package(Cairn) failed"; }
grep -E "^-- Cairn " "$WORK/cmake.log"
grep -q "^Cairn_DIR:PATH=$LIB/cmake/Cairn$" "$CM/CMakeCache.txt" \
  || fail "find_package(Cairn) found $(grep ^Cairn_DIR "$CM/CMakeCache.txt"), not the prefix's"
timeout 180 "$CMAKE" --build "$CM" -j 2 >> "$WORK/cmake.log" 2>&1 \
  || { show "$WORK/cmake.log"; fail "the find_package(Cairn) project does not build"; }
uses_prefix "$CM/embed_worker"
uses_prefix "$CM/embed_master"
echo "built embed_master and embed_worker"

# --- 4. run them -----------------------------------------------------------------
for kind in pc cmake; do
  dir=$PC
  [ $kind = cmake ] && dir=$CM
  step "embed_master ($kind) with its own worker thread"
  timeout 120 "$dir/embed_master" --leaves 16 > "$WORK/$kind-master.out" 2> "$WORK/$kind-master.err" \
    || { show "$WORK/$kind-master.out" "$WORK/$kind-master.err"; fail "embed_master ($kind) failed"; }
  grep -qx "sum 1..16 = 136 (expected 136)" "$WORK/$kind-master.out" \
    || { show "$WORK/$kind-master.out"; fail "embed_master ($kind): wrong or no sum"; }
  tail -n 1 "$WORK/$kind-master.out"
done

step "embed_master (pkg-config) serving embed_worker (find_package)"
timeout 150 "$PC/embed_master" --external --leaves 16 --db "$WORK/ext.db" \
  > "$WORK/ext-master.out" 2> "$WORK/ext-master.err" &
master=$!
pids+=("$master")
wait_line "$WORK/ext-master.out" "^master listening on " "$master" \
  || { show "$WORK/ext-master.out" "$WORK/ext-master.err"; fail "embed_master did not start"; }
url=$(sed -n 's/^master listening on //p' "$WORK/ext-master.out")
# 16 leaves: 31 tasks in all.
timeout 120 "$CM/embed_worker" --server "$url" --dir "$WORK/ext-worker" --slots 2 \
  --max-tasks 31 --exit-when-idle 10 > "$WORK/ext-worker.out" 2> "$WORK/ext-worker.err" \
  || { show "$WORK/ext-worker.out" "$WORK/ext-worker.err"; fail "embed_worker failed"; }
rc=0
wait "$master" || rc=$?
[ $rc -eq 0 ] || { show "$WORK/ext-master.out" "$WORK/ext-master.err" "$WORK/ext-worker.err"; fail "embed_master --external exited $rc"; }
grep -qx "sum 1..16 = 136 (expected 136)" "$WORK/ext-master.out" || fail "embed_master --external: wrong sum"
grep -qx "tasks done 31, failed 0, dropped 0" "$WORK/ext-worker.out" \
  || { show "$WORK/ext-worker.out"; fail "embed_worker did not do the 31 tasks"; }
tail -n 1 "$WORK/ext-master.out"
echo "embed_worker: $(tail -n 1 "$WORK/ext-worker.out")"

step "installed cairn-server and cairn with embed_worker (pkg-config)"
BIN=$PREFIX/$CAIRN_BINDIR
CAIRN_ADMIN_TOKEN=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
export CAIRN_ADMIN_TOKEN
timeout 150 "$BIN/cairn-server" --db "$WORK/server.db" --listen 127.0.0.1:0 \
  --web "$PREFIX/$CAIRN_DATADIR/web" > "$WORK/server.out" 2> "$WORK/server.err" &
server=$!
pids+=("$server")
wait_line "$WORK/server.out" "^cairn-server listening on " "$server" \
  || { show "$WORK/server.out" "$WORK/server.err"; fail "the installed cairn-server did not start"; }
export CAIRN_SERVER
CAIRN_SERVER=$(sed -n 's/^cairn-server listening on //p' "$WORK/server.out")
timeout 30 curl -fsS "$CAIRN_SERVER/" -o "$WORK/index.html" || fail "GET / failed"
cmp -s "$WORK/index.html" "$SRC/web/index.html" || fail "GET / is not the installed web/index.html"
cat > "$WORK/sum.json" <<'EOF'
{"name": "sum", "app": "sum", "policy": "fifo", "tasks": [
  {"id": "a", "args": ["1", "2"]}, {"id": "b", "args": ["3"]},
  {"id": "total", "args": ["100"], "after": ["a", "b"]}]}
EOF
job=$(timeout 30 "$BIN/cairn" submit "$WORK/sum.json") || fail "cairn submit failed"
timeout 120 "$PC/embed_worker" --server "$CAIRN_SERVER" --dir "$WORK/worker" \
  --max-tasks 3 --exit-when-idle 10 > "$WORK/worker.out" 2> "$WORK/worker.err" \
  || { show "$WORK/worker.out" "$WORK/worker.err" "$WORK/server.err"; fail "embed_worker failed"; }
timeout 60 "$BIN/cairn" wait "$job" --timeout 50 || fail "job $job did not finish"
total=$(timeout 30 "$BIN/cairn" results "$job" | awk -F'\t' '$1 == "total" { print $5 }' | sed 's/\\n.*//')
[ "$total" = "106" ] || fail "job $job: total is '$total', expected 106"
grep -qx "tasks done 3, failed 0, dropped 0" "$WORK/worker.out" \
  || { show "$WORK/worker.out"; fail "embed_worker did not do the 3 tasks"; }
echo "job $job: total = $total; embed_worker: $(tail -n 1 "$WORK/worker.out")"
kill -TERM "$server"
rc=0
wait "$server" || rc=$?
[ $rc -eq 0 ] || { show "$WORK/server.err"; fail "cairn-server exited $rc on SIGTERM"; }

echo "install: OK"
