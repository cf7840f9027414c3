#!/usr/bin/env bash
# demo.sh BIN_DIR — runs one DAG job end to end on this machine, as a
# volunteer project would: the operator makes the project's key pair and
# signs and publishes the app (cairn app keygen, cairn app publish) to a
# fresh cairn-server on an ephemeral loopback port started with that
# --app-key; 4 volunteers join with one command and the project's public
# key alone (cairn-worker --project-key), each fetching and verifying the
# signed app; the edit distance of two strings is computed block by block
# (an evolving-mesh dag of 120 tasks, each reading its parents' outputs) and
# checked against a direct computation, each task in its worker's
# bubblewrap sandbox. Stops everything it started; with KEEP=1 in the environment
# (make demo KEEP=1) the server keeps running after the check, and the demo
# prints the dashboard's URL, the admin token and how to stop it.
set -eu
BIN=$(cd "${1:-build/bin}" && pwd)
SRC=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/cairn-demo-XXXXXX")
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

cd "$WORK"
export CAIRN_ADMIN_TOKEN=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
PUBKEY=$("$BIN/cairn" app keygen --out "$WORK/project.key")
echo "operator: project key pair made (cairn app keygen); public key $PUBKEY"
"$BIN/cairn-server" --db "$WORK/demo.db" --listen 127.0.0.1:0 --web "$SRC/web" \
  --app-key "$PUBKEY" > server.out 2> server.log &
pids+=($!)
for _ in $(seq 100); do grep -q listening server.out 2>/dev/null && break; sleep 0.1; done
URL=$(sed -n 's/^cairn-server listening on //p' server.out)
[ -n "$URL" ] || { echo "demo: the server did not start:"; cat server.log; exit 1; }
export CAIRN_SERVER=$URL
echo "server:   $URL   (dashboard: $URL/  metrics: $URL/metrics)"
"$BIN/cairn" app publish editdist 1.0 "$BIN/cairn-app-editdist" --key "$WORK/project.key" \
  | sed 's/^/operator: /'
for i in 1 2 3 4; do
  "$BIN/cairn-worker" --server "$URL" --name "demo-$i" --project-key "$PUBKEY" \
    --dir "$WORK/worker-$i" --exit-when-idle 30 --log-level info > "worker-$i.log" 2>&1 &
  pids+=($!)
done
echo "workers:  4 volunteers (cairn-worker --server URL --project-key PUBKEY: no app installed)"

"$BIN/cairn-app-editdist" --make-strings 300 250 2024 > strings.txt
"$BIN/cairn-app-editdist" --make-job strings.txt 25 > job.json
JOB=$("$BIN/cairn" submit job.json)
echo "job:      $JOB (edit distance of a 300- and a 250-letter string, 12x10 blocks = 120 tasks)"

start=$(date +%s.%N)
"$BIN/cairn" wait "$JOB" --timeout 120
end=$(date +%s.%N)
"$BIN/cairn" status "$JOB"
"$BIN/cairn" volunteers
verified=$(grep -l "app editdist 1.0 for .*: fetched and verified" worker-*.log | wc -l)
echo "apps:     $verified of 4 volunteers fetched editdist 1.0 and verified its signature"
sandboxed=$(grep -l "run in a bubblewrap sandbox" worker-*.log | wc -l)
echo "sandbox:  $sandboxed of 4 volunteers ran each task in a bubblewrap sandbox"

got=$("$BIN/cairn" results "$JOB" | awk -F'\t' '$1 == "11,9" { print $5 }' | sed 's/\\n.*//' | awk '{ print $NF }')
want=$("$BIN/cairn-app-editdist" --direct strings.txt)
printf 'result:   edit distance %s (direct computation: %s) in %s s\n' "$got" "$want" \
  "$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.2f", b - a }')"
if [ "$got" != "$want" ]; then
  echo "demo: FAILED: the distributed result differs from the direct computation"
  exit 1
fi
if [ "${KEEP:-}" = 1 ]; then
  for p in "${pids[@]:1}"; do kill "$p" 2>/dev/null || true; done
  server_pid=${pids[0]}
  pids=()
  trap - EXIT
  echo "demo: OK; the server keeps running (pid $server_pid):"
  echo "  dashboard:   $URL/#/jobs"
  echo "  admin token: $CAIRN_ADMIN_TOKEN"
  echo "  stop it:     kill $server_pid && rm -rf $WORK"
  exit 0
fi
# Stop the server and the workers, then read their logs: a sanitizer's
# report there (the server and workers of a sanitizer build) fails the demo.
for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
wait 2>/dev/null || true
pids=()
if grep -l -e 'Sanitizer' -e 'runtime error:' server.log worker-*.log > reported.txt; then
  echo "demo: FAILED: a sanitizer reported in $(tr '\n' ' ' < reported.txt)"
  while read -r f; do echo "--- $f"; cat "$f"; done < reported.txt
  exit 1
fi
echo "demo: OK"
