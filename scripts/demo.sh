#!/usr/bin/env bash
# demo.sh BIN_DIR — runs one DAG job end to end on this machine, as a
# volunteer project would: the operator makes the project's key pair and
# signs and publishes the app (cairn app keygen, cairn app publish) to a
# fresh cairn-server on an ephemeral loopback port started with that
# --app-key; two people make accounts (cairn account create) and one of
# them a team of accounts (cairn team create) that the other joins; 4
# volunteers join with one command, the project's public key and an account
# key (cairn-worker --project-key --account-key-file), each fetching and
# verifying the signed app; the edit distance of two strings is computed block by block
# (an evolving-mesh dag of 120 tasks, each reading its parents' outputs) and
# checked against a direct computation, each task in its worker's
# bubblewrap sandbox; the accounts' credit and their team's show on the
# project's public pages' data (GET /v1/public/top); a volunteer's receipts
# verify against the master's signed audit log. Stops everything it started; with KEEP=1 in the environment
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
umask 077
for who in ada bob; do
  echo "correct horse battery $who" > "$who.password"
  "$BIN/cairn" account create "$who" "$who@example.org" --password-file "$who.password" \
    > "$who.key" 2> "$who.made"
  ACCOUNT=$(sed -n 's/^account \([0-9]*\).*/\1/p' "$who.made")
  echo "people:   $who made account $ACCOUNT (cairn account create; its key in $who.key, mode 0600)"
  eval "${who}_id=$ACCOUNT"
done
TEAM=$("$BIN/cairn" team create "Demo Owls" --account-key-file ada.key 2>/dev/null)
"$BIN/cairn" team join "$bob_id" "$TEAM" --account-key-file bob.key > /dev/null
echo "people:   ada made team $TEAM, Demo Owls (cairn team create); bob joined it"
for i in 1 2 3 4; do
  who=$([ "$i" -le 2 ] && echo ada || echo bob)
  "$BIN/cairn-worker" --server "$URL" --name "demo-$i" --project-key "$PUBKEY" \
    --account-key-file "$who.key" --dir "$WORK/worker-$i" --exit-when-idle 30 \
    --log-level info > "worker-$i.log" 2>&1 &
  pids+=($!)
done
echo "workers:  4 volunteers, 2 each for ada and bob (cairn-worker --server URL --project-key PUBKEY"
echo "          --account-key-file KEY: no app installed)"

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
for who in ada bob; do
  eval "id=\$${who}_id"
  "$BIN/cairn" account show "$id" --account-key-file "$who.key" | sed "s/^/$who:      /"
done
"$BIN/cairn" team show "$TEAM" | sed 's/^/team:     /'
echo "pages:    $URL/project/ (home, leaderboards, accounts, teams, sign-up)"

got=$("$BIN/cairn" results "$JOB" | awk -F'\t' '$1 == "11,9" { print $5 }' | sed 's/\\n.*//' | awk '{ print $NF }')
want=$("$BIN/cairn-app-editdist" --direct strings.txt)
printf 'result:   edit distance %s (direct computation: %s) in %s s\n' "$got" "$want" \
  "$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.2f", b - a }')"
if [ "$got" != "$want" ]; then
  echo "demo: FAILED: the distributed result differs from the direct computation"
  exit 1
fi
# A volunteer checks the record: worker 1's receipts (one per accepted
# result) proved against the master's newest signed tree head (signed every
# 10 s while the log grows), then checked offline with the audit key the
# worker pinned (cairn audit prove --receipts, cairn audit check).
for _ in $(seq 40); do
  proved=$("$BIN/cairn" audit prove --receipts worker-1/audit/receipts --out receipts-1 2>&1 || true)
  case "$proved" in *", 0 past it, 0 without"*) break ;; esac
  sleep 0.5
done
"$BIN/cairn" audit check --key worker-1/audit/key.json --sth receipts-1/sth.json \
  --receipts receipts-1 > check.out 2>&1 || { cat check.out; echo "demo: FAILED: receipts"; exit 1; }
receipts=$(sed -n 's/^receipts: \([0-9]*\) verified, 0 not proved yet, 0 failed$/\1/p' check.out)
if [ -z "$receipts" ] || [ "$receipts" -eq 0 ]; then
  cat check.out; echo "demo: FAILED: worker 1's receipts were not all verified"; exit 1
fi
echo "receipts: worker 1 (ada's) holds $receipts receipts; each is in the master's signed audit log"
echo "          (cairn audit prove --receipts, then cairn audit check offline with its pinned key)"
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
