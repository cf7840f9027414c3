#!/usr/bin/env bash
# worker_tarball.sh CMAKE BUILD_DIR — the self-contained worker tarball
# (scripts/worker-tarball.sh, docs/launch.md "Shipping the worker"), made
# from the release tree BUILD_DIR/packaging-tree (tests/packaging/tree.sh):
#
#  1. `cmake --build TREE --target worker-tarball` makes
#     cairn-worker-VERSION-linux-ARCH.tar.gz; it unpacks into an empty folder
#     as one top folder with bin/cairn-worker, lib/, README and licences.
#  2. With an empty environment (env -i: no LD_LIBRARY_PATH), ldd resolves
#     every library of bin/cairn-worker but glibc's own inside its lib/, and
#     none is missing (libcurl, jansson, libmicrohttpd and libsodium among
#     them); the binary's run-time path is $ORIGIN/../lib.
#  3. That worker, run with env -i, does a two-task job of a real release
#     cairn-server on loopback.
#  4. `cairn launch local --ship-worker TARBALL` (with --worker pointing at
#     nothing) unpacks it into its work dir and its workers do a second job.
#  5. `cairn launch ssh --ship-worker TARBALL` (--remote-worker pointing at
#     nothing) against a throw-away sshd on a loopback port (keys in the
#     test's folder): the tarball goes to the "host" through ssh's stdin,
#     its worker does a third job, and the shipped folder is gone once the
#     factory exits. Without sshd (or when it does not let us in) this step
#     says so and is skipped.
#
# Everything lives under one temporary folder, removed at the end; every
# process is bounded by `timeout` and stopped at the end. Prints
# "worker tarball: OK" last.
set -euo pipefail
export LC_ALL=C
[ $# -eq 2 ] || { echo "usage: worker_tarball.sh CMAKE BUILD_DIR" >&2; exit 2; }
CMAKE=$1
BUILD=$(cd "$2" && pwd)
TREE=$BUILD/packaging-tree
BIN=$TREE/bin
WORK=$(mktemp -d "${TMPDIR:-/tmp}/cairn-tarball-test-XXXXXX")
pids=()
cleanup() {
  local rc=$?
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
  [ $rc -eq 0 ] || echo "worker tarball: FAILED (exit $rc)" >&2
}
trap cleanup EXIT
fail() { echo "worker tarball: FAILED: $*" >&2; exit 1; }
step() { echo "== $*"; }
show() {
  local f
  for f in "$@"; do [ -f "$f" ] && { echo "--- ${f#"$WORK"/}"; tail -n 30 "$f"; }; done
  return 0
}
wait_line() {
  local i
  for i in $(seq 300); do
    grep -qE "$2" "$1" 2>/dev/null && return 0
    kill -0 "$3" 2>/dev/null || break
    sleep 0.1
  done
  grep -qE "$2" "$1" 2>/dev/null
}
[ -x "$BIN/cairn-server" ] || fail "no release tree at $TREE (the packaging/tree test makes it)"

# --- 1. make and unpack ------------------------------------------------------------
step "cmake --build packaging-tree --target worker-tarball"
rm -f "$TREE"/cairn-worker-*.tar.gz
timeout 600 "$CMAKE" --build "$TREE" --target worker-tarball > "$WORK/make.log" 2>&1 \
  || { show "$WORK/make.log"; fail "the worker-tarball target failed"; }
grep '^worker-tarball:' "$WORK/make.log"
TARBALL=$(ls "$TREE"/cairn-worker-*-linux-"$(uname -m)".tar.gz)
echo "tarball: ${TARBALL##*/}"
U=$WORK/empty
mkdir "$U"
tar -xzf "$TARBALL" -C "$U"
[ "$(ls -A "$U" | wc -l)" -eq 1 ] || fail "the tarball has more than one top folder: $(ls -A "$U")"
TOP=$U/$(ls "$U")
[ "${TOP##*/}.tar.gz" = "${TARBALL##*/}" ] || fail "top folder ${TOP##*/} does not match the tarball's name"
for f in bin/cairn-worker README; do [ -f "$TOP/$f" ] || fail "no $f in the tarball"; done
[ -x "$TOP/bin/cairn-worker" ] || fail "bin/cairn-worker is not executable"
nlib=$(find "$TOP/lib" -name '*.so*' | wc -l)
[ "$nlib" -ge 3 ] || fail "lib/ holds $nlib libraries"
nlic=$(find "$TOP/share/licenses" -name copyright | wc -l)
echo "bin/cairn-worker, $nlib libraries in lib/, $nlic copyright files, README"

# --- 2. every library but glibc's from lib/ ------------------------------------------
step "ldd with an empty environment"
dyn=$(readelf -d "$TOP/bin/cairn-worker")
grep -E '\((RPATH|RUNPATH)\).*\[\$ORIGIN/\.\./lib\]' <<< "$dyn" \
  || fail "bin/cairn-worker has no run-time path \$ORIGIN/../lib"
deps=$(env -i /usr/bin/ldd "$TOP/bin/cairn-worker")
[[ $deps != *"not found"* ]] || { echo "$deps"; fail "a library is not found"; }
glibc='^(linux-vdso|ld-linux|libc|libm|libpthread|libdl|librt|libresolv|libutil|libanl|libnsl|libmvec)\.so'
inside=0
outside=0
libdir=$(readlink -f "$TOP/lib")
while read -r name path; do
  real=$(readlink -f "$path")
  if [[ $name =~ $glibc ]]; then
    [[ $real != "$libdir"/* ]] || fail "$name (glibc's) is bundled"
    outside=$((outside + 1))
  else
    [[ $real == "$libdir"/* ]] || { echo "$deps"; fail "$name resolves outside the tarball: $path"; }
    inside=$((inside + 1))
  fi
done < <(echo "$deps" | awk '$2 == "=>" { print $1, $3 }')
[ "$inside" -eq "$nlib" ] || fail "$inside libraries resolve inside lib/, which holds $nlib"
for want in libcurl libjansson libmicrohttpd libsodium; do
  ls "$TOP/lib/$want".so* > /dev/null 2>&1 || fail "lib/ has no $want"
done
echo "$inside libraries resolve inside the tarball, $outside from the node's glibc"

# --- 3. a job done by the unpacked worker --------------------------------------------
step "the unpacked worker (env -i) against a release cairn-server"
export CAIRN_ADMIN_TOKEN
CAIRN_ADMIN_TOKEN=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
timeout 300 "$BIN/cairn-server" --db "$WORK/server.db" --listen 127.0.0.1:0 \
  > "$WORK/server.out" 2> "$WORK/server.err" &
server=$!
pids+=("$server")
wait_line "$WORK/server.out" "^cairn-server listening on " "$server" \
  || { show "$WORK/server.out" "$WORK/server.err"; fail "cairn-server did not start"; }
export CAIRN_SERVER
CAIRN_SERVER=$(sed -n 's/^cairn-server listening on //p' "$WORK/server.out")
job() { # job NAME WORD: a two-task job of app echo
  printf '{"name": "%s", "app": "echo", "tasks": [{"id": "a", "args": ["%s-a"]},
    {"id": "b", "args": ["%s-b"], "after": ["a"]}]}\n' "$1" "$2" "$2" > "$WORK/$1.json"
  timeout 30 "$BIN/cairn" submit "$WORK/$1.json"
}
check_job() { # check_job ID WORD
  timeout 100 "$BIN/cairn" wait "$1" --timeout 90 > /dev/null || fail "job $1 did not finish"
  timeout 30 "$BIN/cairn" results "$1" > "$WORK/results-$1"
  grep -q "$2-a" "$WORK/results-$1" && grep -q "$2-b" "$WORK/results-$1" \
    || { show "$WORK/results-$1"; fail "job $1: the echo outputs are missing"; }
}
j1=$(job shipped shipped) || fail "cairn submit failed"
timeout 120 env -i "$TOP/bin/cairn-worker" --server "$CAIRN_SERVER" --app echo=/bin/echo \
  --dir "$WORK/worker" --peer-listen off --max-tasks 2 --exit-when-idle 20 \
  > "$WORK/worker.out" 2> "$WORK/worker.err" \
  || { show "$WORK/worker.err" "$WORK/server.err"; fail "the unpacked worker failed"; }
check_job "$j1" shipped
echo "job $j1 done by the unpacked worker: $(tail -n 1 "$WORK/worker.err")"

# --- 4. cairn launch local --ship-worker ---------------------------------------------
step "cairn launch local --ship-worker"
j2=$(job launched launched) || fail "cairn submit failed"
timeout 150 env -u LD_LIBRARY_PATH "$BIN/cairn" launch local --ship-worker "$TARBALL" \
  --worker "$WORK/no-such-worker" --max 2 --idle-exit 5 --poll 0.5 --work-dir "$WORK/launch" \
  --worker-options "--app echo=/bin/echo --peer-listen off" \
  > "$WORK/launch.out" 2> "$WORK/launch.err" &
launcher=$!
pids+=("$launcher")
check_job "$j2" launched
kill -TERM "$launcher"
rc=0
wait "$launcher" || rc=$?
[ $rc -eq 0 ] || { show "$WORK/launch.err"; fail "cairn launch exited $rc"; }
[ -x "$WORK/launch/local/worker/bin/cairn-worker" ] || fail "the tarball was not unpacked into the work dir"
grep -q '^cairn launch: started ' "$WORK/launch.err" || { show "$WORK/launch.err"; fail "no worker started"; }
echo "job $j2 done by launched workers; $(tail -n 1 "$WORK/launch.err")"
# --- 5. cairn launch ssh --ship-worker ------------------------------------------------
step "cairn launch ssh --ship-worker (a throw-away sshd on loopback)"
if [ -x /usr/sbin/sshd ] && [ -x /usr/bin/ssh-keygen ] && [ -x /usr/bin/ssh ]; then
  S=$WORK/ssh
  mkdir -p "$S/remote"
  chmod 700 "$S"
  ssh-keygen -q -t ed25519 -N '' -f "$S/hostkey"
  ssh-keygen -q -t ed25519 -N '' -f "$S/userkey"
  cp "$S/userkey.pub" "$S/authorized_keys"
  [ "$(id -u)" -ne 0 ] || mkdir -p /run/sshd
  up=0
  for try in 1 2 3 4 5; do
    port=$((20000 + RANDOM % 40000))
    printf 'ListenAddress 127.0.0.1:%s\nHostKey %s/hostkey\nAuthorizedKeysFile %s/authorized_keys\nStrictModes no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nPermitRootLogin prohibit-password\nPidFile %s/sshd.pid\nLogLevel ERROR\nAcceptEnv TMPDIR\n' \
      "$port" "$S" "$S" "$S" > "$S/sshd_config"
    printf 'Host node1\n  HostName 127.0.0.1\n  Port %s\n  User %s\n  IdentityFile %s/userkey\n  IdentitiesOnly yes\n  UserKnownHostsFile %s/known_hosts\n  StrictHostKeyChecking accept-new\n  LogLevel ERROR\n  SetEnv TMPDIR=%s/remote\n' \
      "$port" "$(id -un)" "$S" "$S" "$S" > "$S/ssh_config"
    timeout 300 /usr/sbin/sshd -D -e -f "$S/sshd_config" > "$S/sshd.log" 2>&1 &
    sshd=$!
    pids+=("$sshd")
    for i in $(seq 50); do
      if timeout 10 ssh -F "$S/ssh_config" -o BatchMode=yes node1 true 2>/dev/null; then up=1; break; fi
      kill -0 "$sshd" 2>/dev/null || break
      sleep 0.2
    done
    [ $up -eq 1 ] && break
    kill "$sshd" 2>/dev/null || true
    wait "$sshd" 2>/dev/null || true
  done
  if [ $up -eq 1 ]; then
    j3=$(job sshed sshed) || fail "cairn submit failed"
    timeout 150 "$BIN/cairn" launch ssh --hosts node1 --ssh-options "-F $S/ssh_config" \
      --ship-worker "$TARBALL" --remote-worker "$WORK/no-such-worker" --max 1 --idle-exit 5 \
      --poll 0.5 --work-dir "$WORK/launch-ssh" \
      --worker-options "--app echo=/bin/echo --peer-listen off" \
      > "$WORK/launch-ssh.out" 2> "$WORK/launch-ssh.err" &
    launcher=$!
    pids+=("$launcher")
    check_job "$j3" sshed
    shipped=$(find "$S/remote" -maxdepth 1 -name 'cairn-ship.*' | wc -l)
    [ "$shipped" -eq 1 ] || { show "$WORK/launch-ssh.err"; fail "$shipped shipped folders on the host, expected 1"; }
    kill -TERM "$launcher"
    rc=0
    wait "$launcher" || rc=$?
    [ $rc -eq 0 ] || { show "$WORK/launch-ssh.err"; fail "cairn launch ssh exited $rc"; }
    left=$(find "$S/remote" -maxdepth 1 -name 'cairn-ship.*' | wc -l)
    [ "$left" -eq 0 ] || fail "the shipped folder was left on the host"
    echo "job $j3 done by a worker shipped over ssh; its folder removed at exit"
  else
    show "$S/sshd.log"
    echo "ssh shipping not exercised: sshd did not let us in"
  fi
else
  echo "ssh shipping not exercised: openssh-server / openssh-client are not installed"
fi

kill -TERM "$server"
wait "$server" || true
echo "worker tarball: OK"
