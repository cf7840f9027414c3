#!/usr/bin/env bash
# debs.sh CMAKE BUILD_DIR — the .deb packages (cmake/packaging.cmake, README
# "Packages"), made by `cpack -G DEB` in the release tree
# BUILD_DIR/packaging-tree (tests/packaging/tree.sh), inspected with dpkg-deb:
#
#  1. cairn-server, cairn-worker, cairn-cli and python3-cairn are made,
#     nothing else.
#  2. Each holds its files (binaries, units, conf files mode 0600, dashboard,
#     schema, docs; the Python runner; the Python package and the Snakemake
#     profile) and none of the development files (libraries, headers).
#  3. conffiles lists /etc/cairn/server.conf and /etc/cairn/worker.conf; the
#     maintainer scripts are there and executable; Depends (dpkg-shlibdeps)
#     names the libraries each program links.
#  4. The units read their conf file (EnvironmentFile, ExecStart with
#     $CAIRN_*_OPTS), run as a dynamic user with a state directory and the
#     hardening options; `systemd-analyze verify` accepts them (with the
#     packaged binaries), when systemd-analyze is here (else said and
#     skipped); `systemd-analyze security --offline` prints their exposure.
#  5. The packaged programs run with their packaged conf files, read as the
#     units read them (EnvironmentFile, then ExecStart's words): the
#     server's --listen moved to a free loopback port, the worker's --server
#     pointed at it; the worker does a job submitted with the packaged cairn,
#     then, with the packaged runner as app "python", a call of a
#     cairn.Executor of the packaged Python package (/usr/bin/python3).
#
# Prints "debs: OK" last.
set -euo pipefail
export LC_ALL=C
[ $# -eq 2 ] || { echo "usage: debs.sh CMAKE BUILD_DIR" >&2; exit 2; }
CPACK=$(dirname "$1")/cpack
BUILD=$(cd "$2" && pwd)
TREE=$BUILD/packaging-tree
WORK=$(mktemp -d "${TMPDIR:-/tmp}/cairn-debs-test-XXXXXX")
# (the traps end with the script's own status: a cleanup that fails does not change it)
trap 'rc=$?; rm -rf "$WORK" || true; [ $rc -eq 0 ] || echo "debs: FAILED (exit $rc)" >&2; exit $rc' EXIT
fail() { echo "debs: FAILED: $*" >&2; exit 1; }
step() { echo "== $*"; }
[ -x "$TREE/bin/cairn-server" ] || fail "no release tree at $TREE (the packaging/tree test makes it)"
command -v dpkg-deb > /dev/null || fail "dpkg-deb is missing (scripts/install-deps.sh installs dpkg-dev)"

# --- 1. cpack ----------------------------------------------------------------------
step "cpack -G DEB"
rm -f "$TREE"/*.deb
(cd "$TREE" && timeout 300 "$CPACK" -G DEB -B "$WORK/out" > "$WORK/cpack.log" 2>&1) \
  || { tail -n 40 "$WORK/cpack.log"; fail "cpack -G DEB failed"; }
ls "$WORK/out"/*.deb > "$WORK/debs"
sed 's|.*/||' "$WORK/debs"
[ "$(wc -l < "$WORK/debs")" -eq 4 ] || fail "expected 4 packages"
deb() { ls "$WORK/out/$1"_*.deb 2>/dev/null || fail "no $1 package"; }
SERVER=$(deb cairn-server)
WORKER=$(deb cairn-worker)
CLI=$(deb cairn-cli)
PY=$(deb python3-cairn)

# --- 2. files ----------------------------------------------------------------------
step "dpkg-deb -c"
has() { # has DEB MODE_REGEX PATH
  local mode
  mode=$(dpkg-deb -c "$1" | awk -v p="./$3" '$6 == p { print $1 }')
  [[ $mode =~ ^$2$ ]] || fail "${1##*/}: no $3 with mode $2"
}
has "$SERVER" '-rwxr-xr-x' usr/bin/cairn-server
has "$SERVER" '-rw-r--r--' usr/lib/systemd/system/cairn-server.service
has "$SERVER" '-rw-------' etc/cairn/server.conf
has "$SERVER" '-rw-r--r--' usr/share/cairn/web/index.html
for s in "$(dirname "$0")"/../../schema/*.sql; do
  has "$SERVER" '-rw-r--r--' "usr/share/cairn/schema/${s##*/}"
done
has "$WORKER" '-rwxr-xr-x' usr/bin/cairn-worker
has "$WORKER" '-rw-r--r--' usr/lib/systemd/system/cairn-worker.service
has "$WORKER" '-rw-------' etc/cairn/worker.conf
has "$WORKER" '-rw-r--r--' usr/share/doc/cairn-worker/worker.md
has "$CLI" '-rwxr-xr-x' usr/bin/cairn
has "$WORKER" '-rwxr-xr-x' usr/bin/cairn-app-python
for f in __init__ client errors executor job _http; do
  has "$PY" '-rw-r--r--' "usr/lib/python3/dist-packages/cairn/$f.py"
done
has "$PY" '-rw-r--r--' usr/share/cairn/snakemake/cairn/config.yaml
has "$PY" '-rw-r--r--' usr/share/cairn/snakemake/cairn/cairn_snakemake.py
for c in submit status cancel; do
  has "$PY" '-rwxr-xr-x' "usr/share/cairn/snakemake/cairn/cairn-$c"
done
has "$PY" '-rw-r--r--' usr/share/doc/python3-cairn/python.md
for d in "$SERVER" "$WORKER" "$CLI" "$PY"; do
  if dpkg-deb -c "$d" | grep -E '\.so|/include/|pkgconfig|cmake/|cairn-worker-shipped'; then
    fail "${d##*/} holds development files"
  fi
  echo "${d##*/}: $(dpkg-deb -c "$d" | grep -vc '/$') files"
done
cli_files=$(dpkg-deb -c "$CLI")
worker_files=$(dpkg-deb -c "$WORKER")
[[ $cli_files != *usr/bin/cairn-server* && $cli_files != *usr/bin/cairn-worker* ]] \
  || fail "cairn-cli holds a daemon"
[[ $worker_files != *"usr/bin/cairn"$'\n'* && $worker_files != *cairn-server* ]] \
  || fail "cairn-worker holds more than the worker"

# --- 3. control ----------------------------------------------------------------------
step "dpkg-deb -I"
for d in "$SERVER" "$WORKER" "$CLI" "$PY"; do
  dpkg-deb -I "$d" > "$WORK/info"
  grep -E '^ (Package|Version|Depends):' "$WORK/info" | tr -s ' ' | paste -sd ';' -
done
for c in server worker; do
  dpkg-deb -I "$(deb cairn-$c)" > "$WORK/info"
  grep -qE '^ +[0-9]+ bytes, +1 lines +conffiles' "$WORK/info" \
    || fail "cairn-$c: dpkg-deb -I lists no conffiles"
  mkdir -p "$WORK/ctl-$c"
  dpkg-deb -e "$(deb cairn-$c)" "$WORK/ctl-$c"
  [ "$(cat "$WORK/ctl-$c/conffiles")" = "/etc/cairn/$c.conf" ] \
    || fail "cairn-$c: conffiles is '$(cat "$WORK/ctl-$c/conffiles")'"
  for s in postinst prerm postrm; do
    [ -x "$WORK/ctl-$c/$s" ] || fail "cairn-$c: no executable $s"
    sh -n "$WORK/ctl-$c/$s" || fail "cairn-$c: $s is not valid sh"
  done
done
depends() { # depends DEB LIB...: Depends names each
  local dep lib
  dep=$(dpkg-deb -f "$1" Depends)
  echo "${1##*/}: Depends: $dep"
  shift
  for lib in "$@"; do
    [[ $dep =~ (^|, )$lib[0-9a-z.-]*\ \(\>=\  ]] || fail "Depends lacks $lib: $dep"
  done
}
depends "$SERVER" libc6 libjansson libmicrohttpd libsqlite3 libsodium zlib1g
depends "$WORKER" libc6 libjansson libmicrohttpd libcurl libsodium
depends "$CLI" libc6 libjansson libcurl libsodium zlib1g
depends "$PY" python3
[ "$(dpkg-deb -f "$PY" Architecture)" = all ] || fail "python3-cairn is not Architecture: all"
[ "$(dpkg-deb -f "$WORKER" Recommends)" = python3 ] || fail "cairn-worker does not recommend python3"
mkdir -p "$WORK/ctl-python"
dpkg-deb -e "$PY" "$WORK/ctl-python"
for s in postinst prerm; do
  [ -x "$WORK/ctl-python/$s" ] || fail "python3-cairn: no executable $s"
  sh -n "$WORK/ctl-python/$s" || fail "python3-cairn: $s is not valid sh"
done
for d in "$SERVER" "$WORKER" "$CLI" "$PY"; do
  for f in Package Version Architecture Maintainer Description Section; do
    [ -n "$(dpkg-deb -f "$d" "$f")" ] || fail "${d##*/}: no $f field"
  done
  [ "$(dpkg-deb -f "$d" Version)" = "$(dpkg-deb -f "$SERVER" Version)" ] || fail "versions differ"
done

# --- 4. the units ----------------------------------------------------------------------
step "systemd units"
ROOT=$WORK/root
for d in "$SERVER" "$WORKER" "$CLI" "$PY"; do dpkg-deb -x "$d" "$ROOT"; done
for c in server worker; do
  u=$ROOT/usr/lib/systemd/system/cairn-$c.service
  C=$(echo $c | tr a-z A-Z)
  for want in "EnvironmentFile=/etc/cairn/$c.conf" "DynamicUser=yes" "NoNewPrivileges=yes" \
              "ProtectSystem=strict" "ProtectHome=yes" "PrivateTmp=yes" "WantedBy=multi-user.target"; do
    grep -qx "$want" "$u" || fail "cairn-$c.service lacks $want"
  done
  grep -qE "^ExecStart=/usr/bin/cairn-$c .*\\\$CAIRN_${C}_OPTS\$" "$u" \
    || fail "cairn-$c.service does not pass \$CAIRN_${C}_OPTS"
  grep -qE "^StateDirectory=cairn" "$u" || fail "cairn-$c.service has no StateDirectory"
  grep -qE "^CAIRN_${C}_OPTS=" "$ROOT/etc/cairn/$c.conf" || fail "$c.conf does not set CAIRN_${C}_OPTS"
done
if command -v systemd-analyze > /dev/null; then
  mkdir "$WORK/units"
  for c in server worker; do
    sed "s|/usr/bin/|$ROOT/usr/bin/|" "$ROOT/usr/lib/systemd/system/cairn-$c.service" \
      > "$WORK/units/cairn-$c.service"
  done
  if ! systemd-analyze verify "$WORK"/units/*.service > "$WORK/verify.log" 2>&1; then
    cat "$WORK/verify.log"
    fail "systemd-analyze verify rejects the units"
  fi
  echo "systemd-analyze verify: both units accepted"
  for c in server worker; do
    systemd-analyze security --offline=yes "$WORK/units/cairn-$c.service" 2>/dev/null \
      | grep 'Overall exposure' || true
  done
else
  echo "systemd-analyze is not installed: unit verification skipped"
fi

# --- 5. the packaged programs with their packaged conf files ---------------------------
step "cairn-server and cairn-worker with /etc/cairn/*.conf"
# The words of ExecStart after the program, with $CAIRN_*_OPTS from the conf
# file (systemd splits an unbraced $VAR on blanks, as the shell does here).
conf_opts() { # conf_opts CONF VAR
  (set -a; . "$1"; eval "printf '%s\n' \"\$$2\"")
}
sopts=$(conf_opts "$ROOT/etc/cairn/server.conf" CAIRN_SERVER_OPTS | sed 's/--listen [^ ]*/--listen 127.0.0.1:0/')
exec_words() { sed -n "s|^ExecStart=/usr/bin/$1 \(.*\) \\\$CAIRN_.*|\1|p" "$ROOT/usr/lib/systemd/system/$1.service"; }
swords=$(exec_words cairn-server | sed "s|/var/lib/cairn|$WORK/state|g; s|/usr/share|$ROOT/usr/share|g")
mkdir -p "$WORK/state" "$WORK/state-worker"
export CAIRN_ADMIN_TOKEN
CAIRN_ADMIN_TOKEN=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
# shellcheck disable=SC2086 # the words, split as systemd splits them
timeout 120 "$ROOT/usr/bin/cairn-server" $swords $sopts > "$WORK/server.out" 2> "$WORK/server.err" &
server=$!
trap 'rc=$?; kill $server 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$WORK" || true; [ $rc -eq 0 ] || echo "debs: FAILED (exit $rc)" >&2; exit $rc' EXIT
for i in $(seq 300); do
  grep -q '^cairn-server listening on ' "$WORK/server.out" && break
  kill -0 $server 2>/dev/null || break
  sleep 0.1
done
url=$(sed -n 's/^cairn-server listening on //p' "$WORK/server.out")
[ -n "$url" ] || { cat "$WORK/server.err"; fail "the packaged cairn-server did not start with server.conf"; }
timeout 10 curl -fsS "$url/" -o "$WORK/index.html" || fail "the packaged dashboard is not served"
printf '{"name": "packaged", "app": "echo", "tasks": [{"id": "t", "args": ["from-the-package"]}]}\n' > "$WORK/job.json"
export CAIRN_SERVER=$url
job=$(timeout 30 "$ROOT/usr/bin/cairn" submit "$WORK/job.json") || fail "the packaged cairn cannot submit"
wopts=$(conf_opts "$ROOT/etc/cairn/worker.conf" CAIRN_WORKER_OPTS | sed "s|--server [^ ]*|--server $url|")
wwords=$(exec_words cairn-worker | sed "s|/var/lib/cairn-worker|$WORK/state-worker|g")
# shellcheck disable=SC2086
timeout 60 env -i "$ROOT/usr/bin/cairn-worker" $wwords $wopts --max-tasks 1 --exit-when-idle 20 \
  --peer-listen off > "$WORK/worker.out" 2> "$WORK/worker.err" \
  || { cat "$WORK/worker.err"; fail "the packaged cairn-worker failed with worker.conf"; }
timeout 60 "$ROOT/usr/bin/cairn" wait "$job" --timeout 50 > /dev/null || fail "job $job did not finish"
timeout 30 "$ROOT/usr/bin/cairn" results "$job" > "$WORK/results" || fail "cairn results failed"
grep -q from-the-package "$WORK/results" || fail "job $job: no output"
echo "cairn-server $swords $sopts; cairn-worker $wwords $wopts: job $job done"

step "the packaged Python package and runner"
[ -x /usr/bin/python3 ] || fail "no /usr/bin/python3 (scripts/install-deps.sh test installs it)"
# a worker of its own (a new volunteer: the apps are those it registers with)
mkdir "$WORK/state-worker-py"
# shellcheck disable=SC2086
timeout 60 env -i "$ROOT/usr/bin/cairn-worker" ${wwords//state-worker/state-worker-py} $wopts \
  --max-tasks 1 --exit-when-idle 20 --peer-listen off --app "python=$ROOT/usr/bin/cairn-app-python" \
  > "$WORK/worker-py.out" 2> "$WORK/worker-py.err" &
pyworker=$!
got=$(cd "$WORK" && PYTHONPATH="$ROOT/usr/lib/python3/dist-packages" timeout 90 /usr/bin/python3 -c '
import cairn, operator
assert cairn.__file__.startswith("'"$ROOT"'"), cairn.__file__
with cairn.Executor(cairn.Client(), serializer="pickle") as ex:
    print(ex.submit(operator.mul, 6, 7).result(timeout=80))') \
  || { cat "$WORK/worker-py.err"; fail "the packaged cairn.Executor call failed"; }
wait $pyworker || { cat "$WORK/worker-py.err"; fail "the packaged worker with the runner failed"; }
[ "$got" = 42 ] || fail "the packaged Executor answered '$got', not 42"
echo "cairn.Executor of python3-cairn through cairn-worker's cairn-app-python: 6 * 7 = $got"
echo "debs: OK"
