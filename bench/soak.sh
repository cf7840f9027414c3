#!/usr/bin/env bash
# soak.sh [BIN] [--minutes M] [--mesh N] [--workers W] [--seed S] [--keep]
# A kill -9 soak: a cairn-server and W cairn-workers (default 16) run mesh-N
# jobs (default N = 141: 10,011 tasks) with replication 2 and quorum 2; for M
# minutes (default 10) the master (restarted on the same database and port)
# and up to 30% of the workers (restarted with their own --dir, so they
# reuse their credentials) are killed with SIGKILL at random moments. A job
# that ends is followed by another. Then the chaos stops, every job is let
# finish, and the invariants are checked against the API and the database
# (sqlite3, read-only, after the master stopped):
#   * every job and task is done; each task's accepted index is a valid
#     result of that task, it has at least `quorum` valid results from
#     distinct volunteers of its last round, and they all agree (one digest);
#   * every result a worker logged as delivered (its master answered 200)
#     is in the store, with that worker's volunteer; no worker was told its
#     registration was forgotten;
#   * every allocation's index maps back (GET /v1/audit/index/N, the ATAF
#     inverse) to the volunteer and t the store holds, and so does every
#     result's volunteer;
#   * no lease is held on a done task; each volunteer's allocation counter
#     is at least the largest t it used;
#   * no sanitizer report in any log.
# Prints the kills survived and the invariants checked; exits 1 on any
# violation (the logs are kept then), 2 on bad usage. The same --seed
# (or CAIRN_SOAK_SEED) repeats the random choices; their timing differs.
set -eu

BIN=build-release/bin
if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then
  BIN=$1
  shift
fi
MINUTES=10 MESH=141 WORKERS=16 SEED=${CAIRN_SOAK_SEED:-$$} KEEP=0
while [ $# -gt 0 ]; do
  case "$1" in
    --minutes) MINUTES=$2; shift 2 ;;
    --mesh) MESH=$2; shift 2 ;;
    --workers) WORKERS=$2; shift 2 ;;
    --seed) SEED=$2; shift 2 ;;
    --keep) KEEP=1; shift ;;
    -h|--help) sed -n '2,25p' "$0"; exit 0 ;;
    *) echo "soak: unknown option $1" >&2; exit 2 ;;
  esac
done
for v in MINUTES MESH WORKERS SEED; do
  case "${!v}" in
    ''|*[!0-9]*) echo "soak: $v must be a non-negative integer" >&2; exit 2 ;;
  esac
done
if [ "$WORKERS" -lt 2 ] || [ "$WORKERS" -gt 256 ] || [ "$MESH" -lt 2 ] || [ "$MESH" -gt 400 ]; then
  echo "soak: 2 to 256 workers, mesh 2 to 400" >&2
  exit 2
fi
for t in sqlite3 curl jq; do
  command -v "$t" >/dev/null || { echo "soak: needs $t (scripts/install-deps.sh)" >&2; exit 2; }
done
BIN=$(cd "$BIN" && pwd)
RANDOM=$SEED
WORK=$(mktemp -d "${TMPDIR:-/tmp}/cairn-soak-XXXXXX")
DB=$WORK/soak.db
export CAIRN_ADMIN_TOKEN
CAIRN_ADMIN_TOKEN=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
AUTH="Authorization: Bearer $CAIRN_ADMIN_TOKEN"
MPID=0 PORT=0 URL=""
WPID=()   # per worker: its pid, 0 while down
WBACK=()  # per worker: when (epoch seconds, decimals) a down worker comes back
violations=0 checks=0 master_kills=0 worker_kills=0

now() { date +%s.%N; }
later() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a > b) }'; }  # a > b
rand_between() { awk -v lo="$1" -v hi="$2" -v r="$RANDOM" 'BEGIN { printf "%.2f", lo + (hi - lo) * r / 32767 }'; }

cleanup() {
  local p
  for p in "${WPID[@]}" "$MPID"; do [ "$p" -gt 0 ] && kill -9 "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [ "$violations" -eq 0 ] && [ "$KEEP" -eq 0 ]; then rm -rf "$WORK"; else echo "soak: logs in $WORK"; fi
}
trap cleanup EXIT

# start_master: on PORT (0 the first time); the server's log is appended to.
start_master() {
  local try
  for try in $(seq 50); do
    : > "$WORK/server.out"
    "$BIN/cairn-server" --db "$DB" --listen "127.0.0.1:$PORT" >> "$WORK/server.out" 2>> "$WORK/server.log" &
    MPID=$!
    for _ in $(seq 100); do
      grep -q listening "$WORK/server.out" 2>/dev/null && break
      kill -0 "$MPID" 2>/dev/null || break
      sleep 0.05
    done
    if grep -q listening "$WORK/server.out"; then
      URL=$(sed -n 's/^cairn-server listening on //p' "$WORK/server.out")
      PORT=${URL##*:}
      return 0
    fi
    kill -9 "$MPID" 2>/dev/null || true
    wait "$MPID" 2>/dev/null || true
    sleep 0.2  # the port may still be held a moment after a kill
  done
  echo "soak: the master did not start:" >&2
  tail -20 "$WORK/server.log" >&2
  MPID=0
  exit 1
}

start_worker() {
  "$BIN/cairn-worker" --server "$URL" --name "soak-$1" --app "cell=$WORK/cell" --slots 2 \
    --dir "$WORK/w$1" --peer-listen off --log-level info >> "$WORK/w$1.log" 2>&1 &
  WPID[$1]=$!
}

kill9() { kill -9 "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; }

api() { curl -sS --max-time 30 -H "$AUTH" "$URL$1"; }

# submit: a new job, tried until a master answers (a submission whose answer
# was lost may leave a job nobody waits for: the checks cover every job).
submit() {
  local id
  for _ in $(seq 60); do
    if id=$(CAIRN_SERVER=$URL "$BIN/cairn" submit "$WORK/job.json" 2>>"$WORK/submit.log"); then
      echo "$id"
      return 0
    fi
    sleep 0.5
  done
  echo "soak: could not submit a job" >&2
  exit 1
}

job_state() { api "/v1/jobs/$1" 2>/dev/null | jq -r '.state // "unknown"' 2>/dev/null || echo unknown; }

violation() {
  echo "soak: VIOLATION: $*"
  violations=$((violations + 1))
}

# check NAME SQL: SQL counts the rows that break invariant NAME (0 expected).
check() {
  local n
  n=$(sqlite3 -readonly "$DB" "$2")
  checks=$((checks + 1))
  if [ "$n" != "0" ]; then
    violation "$1: $n"
    sqlite3 -readonly "$DB" "${3:-SELECT 1 WHERE 0}" | head -5
  else
    echo "ok: $1"
  fi
}

# --- set up ----------------------------------------------------------------
printf '#!/bin/sh\necho "cell $1 $2"\n' > "$WORK/cell"
chmod +x "$WORK/cell"
"$BIN/cairn" gen mesh "$MESH" --name soak |
  sed 's/"policy": "ic",/"policy": "ic", "replication": 2, "quorum": 2, "lease_seconds": 10, "max_attempts": 100,/' \
  > "$WORK/job.json"
grep -q '"quorum": 2' "$WORK/job.json" || { echo "soak: could not write the job file" >&2; exit 1; }
TASKS=$(grep -c '"id"' "$WORK/job.json")
start_master
for i in $(seq 0 $((WORKERS - 1))); do WPID[i]=0; WBACK[i]=0; start_worker "$i"; done
MAXDOWN=$((WORKERS * 3 / 10))
[ "$MAXDOWN" -ge 1 ] || MAXDOWN=1
JOB=$(submit)
JOBS=1
echo "soak: $URL, $WORKERS workers, mesh $MESH ($TASKS tasks a job, replication 2, quorum 2), $MINUTES min, seed $SEED"

# --- chaos -----------------------------------------------------------------
END=$(awk -v n="$(now)" -v m="$MINUTES" 'BEGIN { printf "%.2f", n + 60 * m }')
NEXT=$(awk -v n="$(now)" -v d="$(rand_between 0.5 4)" 'BEGIN { printf "%.2f", n + d }')
while later "$END" "$(now)"; do
  t=$(now)
  for i in "${!WPID[@]}"; do
    if [ "${WPID[i]}" -eq 0 ] && later "$t" "${WBACK[i]}"; then start_worker "$i"; fi
  done
  if later "$t" "$NEXT"; then
    if [ $((RANDOM % 4)) -eq 0 ]; then
      kill9 "$MPID"
      MPID=0
      master_kills=$((master_kills + 1))
      sleep "$(rand_between 0 2)"
      start_master
    else
      down=0
      for p in "${WPID[@]}"; do [ "$p" -eq 0 ] && down=$((down + 1)); done
      k=$((1 + RANDOM % MAXDOWN))
      while [ "$k" -gt 0 ] && [ "$down" -lt "$MAXDOWN" ]; do
        i=$((RANDOM % WORKERS))
        k=$((k - 1))
        [ "${WPID[i]}" -eq 0 ] && continue
        kill9 "${WPID[i]}"
        WPID[i]=0
        WBACK[i]=$(awk -v n="$t" -v d="$(rand_between 0.2 5)" 'BEGIN { printf "%.2f", n + d }')
        worker_kills=$((worker_kills + 1))
        down=$((down + 1))
      done
    fi
    NEXT=$(awk -v n="$(now)" -v d="$(rand_between 0.3 6)" 'BEGIN { printf "%.2f", n + d }')
  fi
  if [ "$(job_state "$JOB")" = done ]; then
    JOB=$(submit)
    JOBS=$((JOBS + 1))
  fi
  sleep 0.2
done
echo "soak: chaos over after $master_kills master kills and $worker_kills worker kills; $JOBS jobs submitted"

# --- let every job finish --------------------------------------------------
for i in "${!WPID[@]}"; do [ "${WPID[i]}" -eq 0 ] && start_worker "$i"; done
deadline=$(( $(date +%s) + 600 ))
while :; do
  open=$(api /v1/jobs | jq '[.jobs[] | select(.state != "done")] | length')
  [ "$open" = 0 ] && break
  if [ "$(date +%s)" -gt "$deadline" ]; then
    violation "jobs not done 600 s after the chaos: $(api /v1/jobs | jq -c '[.jobs[] | select(.state != "done") | {id, state, counts}]')"
    break
  fi
  sleep 1
done

# --- the audit, through the API: every allocation maps back -----------------
sqlite3 -readonly "$DB" "SELECT idx || ' ' || volunteer_id || ' ' || t FROM allocations ORDER BY idx" \
  > "$WORK/alloc.txt"
awk -v u="$URL" '{ printf "url = \"%s/v1/audit/index/%s\"\n", u, $1 }' "$WORK/alloc.txt" > "$WORK/audit.cfg"
curl -sS --max-time 600 -H "$AUTH" -K "$WORK/audit.cfg" | jq -r '"\(.index) \(.row) \(.t)"' > "$WORK/audit.txt"
checks=$((checks + 1))
if cmp -s "$WORK/alloc.txt" "$WORK/audit.txt"; then
  echo "ok: the audit maps all $(wc -l < "$WORK/alloc.txt") allocations back to their volunteer and t"
else
  violation "the audit disagrees with the store on $(diff "$WORK/alloc.txt" "$WORK/audit.txt" | grep -c '^<') allocations"
  diff "$WORK/alloc.txt" "$WORK/audit.txt" | head -5
fi

# each volunteer's allocation counter (the master's, GET /v1/volunteers) is
# at least the largest t the store holds for it
api /v1/volunteers | jq -r '.volunteers[] | "\(.id) \(.allocations)"' | sort -k1,1 > "$WORK/counters.txt"
sqlite3 -readonly "$DB" "SELECT volunteer_id || ' ' || max(t) FROM allocations GROUP BY volunteer_id" |
  sort -k1,1 > "$WORK/maxt.txt"
checks=$((checks + 1))
low=$(join -a2 -e -1 -o 0,1.2,2.2 "$WORK/counters.txt" "$WORK/maxt.txt" | awk '$2 < $3' | wc -l)
if [ "$low" -ne 0 ]; then
  violation "$low volunteers' allocation counters are below the largest t they used"
else
  echo "ok: every allocation counter is at least the largest t its volunteer used"
fi

# --- stop everything, then the store --------------------------------------
for p in "${WPID[@]}"; do [ "$p" -gt 0 ] && kill "$p" 2>/dev/null || true; done
for p in "${WPID[@]}"; do [ "$p" -gt 0 ] && wait "$p" 2>/dev/null || true; done
WPID=()
kill "$MPID" 2>/dev/null || true
wait "$MPID" 2>/dev/null || true
MPID=0

# what the workers were told: "result N delivered" (200) under volunteer V
for f in "$WORK"/w*.log; do
  awk '/registered with .* as volunteer /  { for (i = 1; i < NF; i++) if ($i == "volunteer") v = $(i + 1) }
       /reusing volunteer /               { for (i = 1; i < NF; i++) if ($i == "volunteer") v = $(i + 1) }
       / result [0-9]+ delivered/         { for (i = 1; i < NF; i++) if ($i == "result") print $(i + 1), v }' "$f"
done | sort -n > "$WORK/delivered.txt"
acked=$(wc -l < "$WORK/delivered.txt")
sqlite3 -readonly "$DB" "SELECT idx || ' ' || volunteer_id FROM results ORDER BY idx" > "$WORK/results.txt"
checks=$((checks + 1))
missing=$(join -v1 -j1 <(sort -k1,1 "$WORK/delivered.txt") <(sort -k1,1 "$WORK/results.txt") | wc -l)
wrongvol=$(join -j1 <(sort -k1,1 "$WORK/delivered.txt") <(sort -k1,1 "$WORK/results.txt") | awk '$2 != $3' | wc -l)
if [ "$acked" -eq 0 ]; then
  violation "no worker logged a delivered result"
elif [ "$missing" -ne 0 ] || [ "$wrongvol" -ne 0 ]; then
  violation "$missing of $acked acknowledged results missing from the store, $wrongvol under another volunteer"
else
  echo "ok: all $acked acknowledged results are in the store, under the volunteer that delivered them"
fi
checks=$((checks + 1))
if grep -h "no longer knows volunteer" "$WORK"/w*.log | head -3 | grep -q .; then
  violation "a master forgot a volunteer whose registration it had acknowledged"
else
  echo "ok: no acknowledged registration was forgotten"
fi

check "jobs not done" "SELECT count(*) FROM jobs WHERE state != 'done'"
check "tasks not done" "SELECT count(*) FROM tasks WHERE state != 'done' OR accepted IS NULL"
check "accepted index not a valid result of its task" \
  "SELECT count(*) FROM tasks t LEFT JOIN results r ON r.idx = t.accepted
   WHERE r.idx IS NULL OR r.task_id != t.id OR r.outcome != 'valid'"
VALID="FROM results r JOIN allocations a ON a.idx = r.idx
       WHERE r.task_id = t.id AND r.outcome = 'valid' AND a.round = t.round"
check "tasks without a quorum of valid results from distinct volunteers" \
  "SELECT count(*) FROM tasks t JOIN jobs j ON j.id = t.job_id
   WHERE (SELECT count(DISTINCT r.volunteer_id) $VALID) < j.quorum
      OR (SELECT count(*) $VALID) != (SELECT count(DISTINCT r.volunteer_id) $VALID)"
check "tasks whose valid results disagree" \
  "SELECT count(*) FROM tasks t WHERE (SELECT count(DISTINCT r.digest) $VALID) != 1"
check "results whose volunteer or task is not their allocation's" \
  "SELECT count(*) FROM results r LEFT JOIN allocations a ON a.idx = r.idx
   WHERE a.idx IS NULL OR a.volunteer_id != r.volunteer_id OR a.task_id != r.task_id"
check "leases held on done tasks" \
  "SELECT count(*) FROM allocations a JOIN tasks t ON t.id = a.task_id
   WHERE a.state = 'leased' AND t.state = 'done'"
extra=$(sqlite3 -readonly "$DB" "SELECT count(*) FROM tasks t JOIN jobs j ON j.id = t.job_id
   WHERE (SELECT count(*) $VALID) > j.quorum")
echo "soak: $extra tasks have more valid results than their quorum (late copies that agreed)"

# the audit chain across every kill -9: whole, signed, and the live tables
# still what it says (cairn audit verify --db, read-only)
checks=$((checks + 1))
if "$BIN/cairn" audit verify --db "$DB" > "$WORK/verify.txt" 2>&1; then
  echo "ok: the audit chain verifies and the live tables match it" \
       "($(grep -h -e '^entries checked' -e '^live rows' "$WORK/verify.txt" | tr '\n' ' '))"
else
  violation "cairn audit verify --db: $(grep -h -e 'FIRST PROBLEM' -e 'cairn:' "$WORK/verify.txt" |
                                         head -n 1)"
fi

checks=$((checks + 1))
if grep -l -e 'Sanitizer' -e 'runtime error:' "$WORK"/server.log "$WORK"/w*.log > "$WORK/reported.txt"; then
  violation "a sanitizer reported in $(tr '\n' ' ' < "$WORK/reported.txt")"
else
  echo "ok: no sanitizer report"
fi

tasks_done=$(sqlite3 -readonly "$DB" "SELECT count(*) FROM tasks WHERE state = 'done'")
echo "soak: survived $master_kills master kills and $worker_kills worker kills (kill -9) in $MINUTES min;" \
  "$JOBS jobs, $tasks_done tasks done, $acked results acknowledged"
echo "soak: $checks invariants checked, $violations violated"
if [ "$violations" -ne 0 ]; then
  echo "soak: FAILED"
  exit 1
fi
echo "soak: OK"
