#!/usr/bin/env bash
# dataflow.sh BIN [--clusters C] [--workers W] [--size-mib S]
#                 [--fast-mbit F] [--slow-mbit L] [--master-mbit M]
#                 [--modes A,B,...] [--repeat R] [--timeout SECONDS] [--quick]
# A shuffle over real, rate-shaped links (bench/lib/netns.sh, the topology of
# bench/distribution.sh): a master and C clusters of W workers, each in its
# own network namespace, every worker started with --peer-listen and
# --cluster. The job is a 2-level DAG: N = C x W producers, one per worker,
# each writing an S MiB file; then N consumers, one per worker, each reading
# all N producers' files and writing the SHA-256 of what it read (checked
# here against the digest of the files' known contents). Level 2's makespan
# (from the moment the benchmark sees every producer done until every
# consumer holds its N inputs) is measured under each mode of --modes, R
# times (medians reported):
#   master-relay  "keep": "master": every file goes up to the master and
#                 down again to each consumer;
#   online        "keep": "workers", cairn-server --multicast-plan online
#                 (without the flag when the master has none: today's peer
#                 fetch, own cluster's holder first);
#   WR, WRP, CDMD "keep": "workers", --multicast-plan NAME (skipped, saying
#                 so, when cairn-server --help lists no --multicast-plan).
# Beside each: the master's and the peers' bytes served (/metrics,
# cairn_file_bytes_served_total) and the model's prediction and lower bound
# of the level-2 transfers (docs/dataflow.md): `cairn plan FEF|WR|WRP` of
# the HNOW instance (online: FEF), `cairn plan LH-LS` of the CDMD instance,
# and for master-relay the master's bytes served / its link rate (medians
# over the runs: each run's holders give its own instance). Each run also
# prints, from the master's log, the copies it handed out, how many of
# them crossed between clusters (3 per file is the least for 4 clusters)
# and how many followed a plan, and the plans it built.
# --quick: 2 clusters x 2 workers, 2 MiB (a smoke run). --timeout bounds the
# whole run (default 3600 s). Needs root, ip and tc: without them it says
# so and exits 1. Every namespace, process and folder it made is removed on
# exit.
set -eu

BIN=build-release/bin
if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then
  BIN=$1
  shift
fi
CLUSTERS=4
WORKERS=4
SIZE_MIB=8
FAST_MBIT=1000
SLOW_MBIT=100
MASTER_MBIT=
MODES=master-relay,online,WR,WRP,CDMD
REPEAT=3
TIMEOUT=3600
while [ $# -gt 0 ]; do
  case "$1" in
    --clusters) CLUSTERS=$2; shift 2 ;;
    --workers) WORKERS=$2; shift 2 ;;
    --size-mib) SIZE_MIB=$2; shift 2 ;;
    --fast-mbit) FAST_MBIT=$2; shift 2 ;;
    --slow-mbit) SLOW_MBIT=$2; shift 2 ;;
    --master-mbit) MASTER_MBIT=$2; shift 2 ;;
    --modes) MODES=$2; shift 2 ;;
    --repeat) REPEAT=$2; shift 2 ;;
    --timeout) TIMEOUT=$2; shift 2 ;;
    --quick) CLUSTERS=2; WORKERS=2; SIZE_MIB=2; shift ;;
    -h|--help) sed -n '2,34p' "$0"; exit 0 ;;
    *) echo "dataflow: unknown option $1" >&2; exit 2 ;;
  esac
done
MASTER_MBIT=${MASTER_MBIT:-$SLOW_MBIT}
for v in CLUSTERS WORKERS SIZE_MIB FAST_MBIT SLOW_MBIT MASTER_MBIT REPEAT TIMEOUT; do
  case "${!v}" in
    ''|*[!0-9]*|0*) echo "dataflow: $v must be a positive integer" >&2; exit 2 ;;
  esac
done
if [ "$CLUSTERS" -gt 16 ] || [ "$WORKERS" -gt 16 ] || [ "$SIZE_MIB" -gt 1024 ]; then
  echo "dataflow: at most 16 clusters of 16 workers and 1024 MiB a file" >&2
  exit 2
fi
IFS=, read -r -a MODE_LIST <<<"$MODES"
for a in "${MODE_LIST[@]}"; do
  case "$a" in
    master-relay|online|WR|WRP|CDMD) ;;
    *) echo "dataflow: unknown mode \"$a\" in --modes (master-relay, online, WR, WRP, CDMD)" >&2; exit 2 ;;
  esac
done
BIN=$(cd "$BIN" && pwd)
for b in cairn-server cairn-worker cairn; do
  [ -x "$BIN/$b" ] || { echo "dataflow: $BIN/$b missing (build first: make release)" >&2; exit 1; }
done
for t in ip tc curl jq awk sha256sum; do
  command -v "$t" >/dev/null ||
    { echo "dataflow: FAILED: $t is not installed (scripts/install-deps.sh installs it)" >&2; exit 1; }
done
if [ "$(id -u)" != 0 ]; then
  echo "dataflow: FAILED: needs root (network namespaces, veth pairs, tc shaping)" >&2
  exit 1
fi
# the master's planner flag: another master may not have it
MCAST=0
"$BIN/cairn-server" --help 2>&1 | grep -q -- '--multicast-plan' && MCAST=1

N=$((CLUSTERS * WORKERS))
BYTES=$((SIZE_MIB * 1048576))
P=cdf$$
PORT=7000
MASTER_IP=10.200.0.2
URL=http://$MASTER_IP:$PORT
UP=()
for _ in $(seq 1 "$CLUSTERS"); do UP+=("$SLOW_MBIT"); done
WORK=$(mktemp -d "${TMPDIR:-/tmp}/cairn-dataflow.XXXXXX")
# shellcheck disable=SC2034 # read by bench/lib/netns.sh
NSLIST=()
SPIDS=() # the masters
WPIDS=() # the workers
. "$(dirname "$0")/lib/netns.sh"
START=${EPOCHREALTIME%.*}
DEADLINE=$((START + TIMEOUT))

# Workers are killed (a graceful leave would upload the files they keep),
# then the master; then the namespaces and the folder go.
stop_run() {
  local pid
  for pid in "${WPIDS[@]+"${WPIDS[@]}"}"; do kill -KILL "$pid" 2>/dev/null || true; done
  for pid in "${SPIDS[@]+"${SPIDS[@]}"}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${WPIDS[@]+"${WPIDS[@]}"}" "${SPIDS[@]+"${SPIDS[@]}"}"; do wait "$pid" 2>/dev/null || true; done
  WPIDS=()
  SPIDS=()
}
cleanup() {
  stop_run
  netns_delete
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

skip() {
  echo "dataflow: FAILED: $1" >&2
  exit 1
}

fail() {
  echo "dataflow: FAILED: $1"
  [ -n "${2:-}" ] && tail -n 3 "$2"/worker-*.err "$2/server.err" 2>/dev/null | sed 's/^/  /'
  exit 1
}

# past_deadline PHASE_DEADLINE: the phase's or the whole run's deadline passed
past_deadline() {
  local now=${EPOCHREALTIME%.*}
  [ "$now" -ge "$1" ] || [ "$now" -ge "$DEADLINE" ]
}

netns_topology

# ---- the app and the expected digest ------------------------------------------
# produce DIR N BYTES: waits until the N producers have started (one per
# worker: each worker has one slot), then writes BYTES of the line
# "dataflow ID" repeated to out.bin.
# consume DIR N: records when it started (its N inputs verified and in
# place) with the worker's cluster and its number of inputs, waits until
# the N consumers have (so each worker takes exactly one and keeps serving
# its peers), then writes the SHA-256 of its inputs (in the order of their
# folders' names) to sum.txt and prints it.
cat >"$WORK/df.sh" <<'EOF'
#!/bin/sh
set -eu
d=$2
n=$3
barrier() { # FOLDER
  i=0
  while [ "$(ls "$1" | grep -cv '\.tmp$')" -lt "$n" ]; do
    i=$((i + 1))
    [ "$i" -gt 12000 ] && exit 3
    sleep 0.1
  done
}
case "$1" in
  produce)
    : >"$d/started/$CAIRN_TASK_ID"
    barrier "$d/started"
    yes "dataflow $CAIRN_TASK_ID" | head -c "$4" >out.bin
    ;;
  consume)
    now=$(date +%s.%N)
    printf '%s %s %s\n' "$now" "$CAIRN_DATAFLOW_CLUSTER" "$(ls inputs | wc -l)" >"$d/held/$CAIRN_TASK_ID.tmp"
    mv "$d/held/$CAIRN_TASK_ID.tmp" "$d/held/$CAIRN_TASK_ID"
    barrier "$d/held"
    s=$(cat inputs/*/out.bin | sha256sum | cut -d' ' -f1)
    echo "$s" >sum.txt
    echo "$s"
    ;;
esac
EOF
chmod +x "$WORK/df.sh"
SHA=$(for k in $(seq 1 "$N" | sed 's/^/p/' | LC_ALL=C sort); do
        yes "dataflow $k" | head -c "$BYTES"
      done | sha256sum | cut -d' ' -f1)

export CAIRN_ADMIN_TOKEN
CAIRN_ADMIN_TOKEN=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
api() { # PATH
  ip netns exec "$P-m" curl -sf -m 10 -H "Authorization: Bearer $CAIRN_ADMIN_TOKEN" "$URL$1"
}
metric() { # NAME{LABELS}: its value in /metrics (0 when absent)
  api /metrics | awk -v k="$1" '$1 == k { v = $2 } END { printf "%.0f", v + 0 }'
}

# job KEEP DIR: P1..PN, then QK after every P reading every Pi/out.bin
job() {
  local i k
  printf '{"name": "dataflow", "app": "df", "policy": "fifo", "keep": "%s", "lease_seconds": 120,\n' "$1"
  printf ' "max_attempts": 3, "tasks": ['
  for i in $(seq 1 "$N"); do
    printf '%s\n  {"id": "p%d", "args": ["produce", "%s", "%d", "%d"], "outputs": ["out.bin"]}' \
      "$([ "$i" -gt 1 ] && echo ,)" "$i" "$2" "$N" "$BYTES"
  done
  for i in $(seq 1 "$N"); do
    printf ',\n  {"id": "q%d", "args": ["consume", "%s", "%d"], "outputs": ["sum.txt"], "inputs": [' "$i" "$2" "$N"
    for k in $(seq 1 "$N"); do printf '%s"p%d/out.bin"' "$([ "$k" -gt 1 ] && echo ', ')" "$k"; done
    printf '], "after": ['
    for k in $(seq 1 "$N"); do printf '%s"p%d"' "$([ "$k" -gt 1 ] && echo ', ')" "$k"; done
    printf ']}'
  done
  printf '\n]}\n'
}

# ---- the models ------------------------------------------------------------
# HOLDERS: the node (worker (i-1)*W + j-1 for c<i>w<j>) that made each
# producer's file, p1..pN in order, read from the job's tasks after level 1.
# HNOW instance ([WYL], docs/planning.md), seconds and bytes: S(i, m) = m /
# the worker's own link (its link is busy while it sends); X(i, j) = 0 in
# a cluster, 1/min(uplinks) - 1/fast between clusters (the rest of the
# path); R = 1 ms; so one copy takes m / the path's slowest link. Shared
# uplinks are not in the model (each pair has its own path).
hnow_instance() {
  awk -v c="$CLUSTERS" -v w="$WORKERS" -v f="$FAST_MBIT" -v ups="${UP[*]}" -v b="$BYTES" \
      -v holders="$HOLDERS" 'BEGIN {
    n = c * w; split(ups, up, " "); split(holders, h, " ")
    printf "{\"model\": \"hnow\", \"nodes\": ["
    for (i = 0; i < n; i++) printf "%s{\"S\": [0, %.6e], \"R\": 0.001}", i ? ", " : "", 8 / (f * 1e6)
    printf "],\n \"X\": ["
    for (i = 0; i < n; i++) {
      printf "%s[", i ? ", " : ""
      for (j = 0; j < n; j++) {
        ci = int(i / w) + 1; cj = int(j / w) + 1
        r = up[ci] < up[cj] ? up[ci] : up[cj]
        printf "%s%s", j ? ", " : "", ci == cj ? "0" : sprintf("%.6e", 8 / (r * 1e6) - 8 / (f * 1e6))
      }
      printf "]"
    }
    printf "],\n \"messages\": ["
    for (k = 1; k <= n; k++) {
      printf "%s{\"source\": %d, \"length\": %d, \"dests\": [", (k > 1) ? ", " : "", h[k], b
      first = 1
      for (j = 0; j < n; j++) if (j != h[k]) { printf "%s%d", first ? "" : ", ", j; first = 0 }
      printf "]}"
    }
    printf "]}\n"
  }'
}
# CDMD instance ([Gon]): a processor per worker, a message per producer's
# file needed by every other worker, its length one copy over the slowest
# uplink in ms (a multicast that crosses clusters is held to it).
cdmd_instance() {
  awk -v c="$CLUSTERS" -v w="$WORKERS" -v ups="${UP[*]}" -v b="$BYTES" -v holders="$HOLDERS" 'BEGIN {
    n = c * w; split(ups, up, " "); split(holders, h, " ")
    r = up[1]; for (i = 2; i <= c; i++) if (up[i] < r) r = up[i]
    len = int(b * 8 / (r * 1e6) * 1000 + 0.999)
    printf "{\"model\": \"cdmd\", \"processors\": %d, \"messages\": [", n
    for (k = 1; k <= n; k++) {
      printf "%s{\"name\": \"p%d\", \"length\": %d, \"holder\": %d, \"needed_by\": [", (k > 1) ? ", " : "", k, len, h[k]
      first = 1
      for (j = 0; j < n; j++) if (j != h[k]) { printf "%s%d", first ? "" : ", ", j; first = 0 }
      printf "]}"
    }
    printf "]}\n"
  }'
}
# model MODE DIR: sets MODEL, PRED_S, LB_S for the run in DIR
model() {
  local alg scale=1 inst
  case "$1" in
    master-relay)
      MODEL="master link"
      PRED_S=$(awk -v b="$BYTES_MASTER" -v m="$MASTER_MBIT" 'BEGIN { printf "%.2f", b * 8 / (m * 1e6) }')
      LB_S=$(awk -v n="$N" -v b="$BYTES" -v m="$MASTER_MBIT" 'BEGIN { printf "%.2f", n * (n - 1) * b * 8 / (m * 1e6) }')
      return ;;
    online) alg=FEF ;;
    CDMD) alg=LH-LS scale=1000 ;;
    *) alg=$1 ;;
  esac
  if [ "$1" = CDMD ]; then
    inst=cdmd
    cdmd_instance >"$2/cdmd.json"
  else
    inst=hnow
    hnow_instance >"$2/hnow.json"
  fi
  "$BIN/cairn" plan "$alg" "$2/$inst.json" >"$2/plan.json" || fail "cairn plan $alg $inst.json failed"
  MODEL="$inst $alg"
  PRED_S=$(jq -r '.makespan' "$2/plan.json" | awk -v k="$scale" '{ printf "%.2f", $1 / k }')
  LB_S=$(jq -r '.lower_bound' "$2/plan.json" | awk -v k="$scale" '{ printf "%.2f", $1 / k }')
}

# ---- one run ---------------------------------------------------------------
# run NAME MODE: a fresh master and fresh workers run the shuffle; sets
# MAKESPAN, BYTES_MASTER, BYTES_PEER, MODEL, PRED_S, LB_S.
run() {
  local name=$1 mode=$2 d=$WORK/$1 keep=workers flag=() pid i j t0 until now n vols
  local m0 p0 m1 p1 total
  mkdir -p "$d/started" "$d/held"
  [ "$mode" = master-relay ] && keep=master
  [ "$mode" != master-relay ] && [ "$MCAST" = 1 ] && flag=(--multicast-plan "$mode")
  ip netns exec "$P-m" "$BIN/cairn-server" --db "$d/cairn.db" --listen "$MASTER_IP:$PORT" \
    --no-fsync --log-level info "${flag[@]+"${flag[@]}"}" >"$d/server.out" 2>"$d/server.err" &
  SPIDS+=($!)
  for _ in $(seq 1 100); do
    grep -q listening "$d/server.out" 2>/dev/null && break
    kill -0 "${SPIDS[0]}" 2>/dev/null || fail "cairn-server did not start: $(cat "$d/server.err")"
    sleep 0.1
  done
  ip netns exec "$P-c${CLUSTERS}w$WORKERS" curl -sf -m 5 -o /dev/null "$URL/healthz" ||
    fail "a worker namespace cannot reach the master at $URL"
  job "$keep" "$d" >"$d/job.json"
  JOB=$(ip netns exec "$P-m" "$BIN/cairn" submit "$d/job.json" --server "$URL") || fail "$name: submit refused" "$d"
  for i in $(seq 1 "$CLUSTERS"); do
    for j in $(seq 1 "$WORKERS"); do
      ip netns exec "$P-c${i}w$j" env "CAIRN_DATAFLOW_CLUSTER=c$i" "$BIN/cairn-worker" --server "$URL" \
        --app "df=$WORK/df.sh" --cluster "c$i" --name "c${i}w$j" --dir "$d/w-c${i}w$j" --slots 1 \
        --peer-listen 0.0.0.0:0 2>"$d/worker-c${i}w$j.err" >/dev/null &
      WPIDS+=($!)
    done
  done
  # level 1: t0 is the start of the first poll that sees every producer
  # done (its answer takes tens of ms under load: taking its end would count
  # that time out of level 2)
  m0=$(metric 'cairn_file_bytes_served_total{source="master"}')
  p0=$(metric 'cairn_file_bytes_served_total{source="peer"}')
  until=$((${EPOCHREALTIME%.*} + 120 + 3 * N * SIZE_MIB * 9 / MASTER_MBIT))
  while :; do
    t0=$EPOCHREALTIME
    n=$(api "/v1/jobs/$JOB/tasks?limit=10000" | jq '[.tasks[] | select((.id | startswith("p")) and .state == "done")] | length') || n=0
    n=${n:-0}
    [ "$n" -ge "$N" ] && break
    past_deadline "$until" && fail "$name: only $n of $N producers done" "$d"
    sleep 0.05
  done
  # level 2: every consumer holds its N inputs
  until=$((${t0%.*} + 120 + 3 * N * N * SIZE_MIB * 9 / MASTER_MBIT))
  while :; do
    n=$(find "$d/held" -maxdepth 1 -name 'q*' ! -name '*.tmp' | wc -l)
    [ "$n" -ge "$N" ] && break
    past_deadline "$until" && fail "$name: only $n of $N consumers hold their inputs after $((${EPOCHREALTIME%.*} - ${t0%.*})) s" "$d"
    sleep 0.05
  done
  MAKESPAN=$(cat "$d"/held/q* | awk -v t0="$t0" '{ if ($1 - t0 > m) m = $1 - t0 } END { printf "%.2f", m }')
  ip netns exec "$P-m" "$BIN/cairn" wait "$JOB" --server "$URL" --timeout 300 >/dev/null ||
    fail "$name: job $JOB did not finish" "$d"
  api "/v1/jobs/$JOB/tasks?limit=10000" >"$d/tasks.json"
  n=$(jq --arg s "$SHA" '[.tasks[] | select(.state != "done" or ((.id | startswith("q")) and (.output | rtrimstr("\n")) != $s))] | length' "$d/tasks.json")
  [ "$n" = 0 ] || fail "$name: $n tasks did not finish with the right digest (want $SHA)" "$d"
  n=$(awk -v n="$N" '$3 != n' "$d"/held/q* | wc -l)
  [ "$n" = 0 ] || fail "$name: $n consumers did not have $N inputs"
  # the holders: the volunteer that made each producer's file, by name
  vols=$(api /v1/volunteers | jq -c '[.volunteers[] | {key: (.id | tostring), value: .name}] | from_entries')
  HOLDERS=$(jq -r --argjson v "$vols" --argjson w "$WORKERS" '[.tasks[] | select(.id | startswith("p"))]
    | sort_by(.id | ltrimstr("p") | tonumber)[] | $v[.volunteer | tostring]
    | capture("c(?<c>[0-9]+)w(?<j>[0-9]+)") | ((.c | tonumber) - 1) * $w + (.j | tonumber) - 1' "$d/tasks.json" | paste -sd' ')
  [ "$(wc -w <<<"$HOLDERS")" = "$N" ] || fail "$name: cannot name the holder of every producer's file ($HOLDERS)"
  [ "$(tr ' ' '\n' <<<"$HOLDERS" | sort -u | wc -l)" = "$N" ] ||
    echo "dataflow: $name: note: a worker made two producers' files (holders $HOLDERS)"
  # served bytes reach the master with the workers' next heartbeats: wait
  # for every consumer's N-1 other files, then for two equal readings
  total=$((N * (N - 1) * BYTES))
  m1=-1 p1=-1
  for _ in $(seq 1 80); do
    BYTES_MASTER=$(($(metric 'cairn_file_bytes_served_total{source="master"}') - m0))
    BYTES_PEER=$(($(metric 'cairn_file_bytes_served_total{source="peer"}') - p0))
    [ $((BYTES_MASTER + BYTES_PEER)) -ge "$total" ] && [ "$BYTES_MASTER" = "$m1" ] && [ "$BYTES_PEER" = "$p1" ] && break
    m1=$BYTES_MASTER p1=$BYTES_PEER
    sleep 0.5
  done
  model "$mode" "$d"
  copies "$d"
  stop_run
  rm -rf "$d"
}

# copies DIR: from the master's log lines `TIME INFO: kept SHA: TO
# (CLUSTER) <- FROM (CLUSTER), HOW`, the copies handed out (a copy another
# task of the same worker reads is logged once), how many crossed between
# clusters and how many of those the plan named, the seconds from the first
# hand-out to the last, and the plans built; sets COPIES.
copies() {
  local c
  c=$(cat "$1/server.out" "$1/server.err" 2>/dev/null |
    sed -nE 's/^[0-9-]+T([0-9]+):([0-9]+):([0-9]+)Z .* kept [0-9a-f]+: [^ ]+ \(([^)]*)\) <- [^ ]+ \(([^)]*)\), (.*)$/\1 \2 \3 \4 \5 \6/p' |
    awk '{ t = $1 * 3600 + $2 * 60 + $3; if (!n++) t0 = t; t1 = t; a = ($4 != $5); x += a; p += ($6 != "online"); xp += a && ($6 != "online") }
      END { printf "%d copies, %d across clusters (%d planned, %d online), %d planned in all, handed out over %d s", n, x, xp, x - xp, p, t1 - t0 }')
  COPIES="$c; $(cat "$1/server.out" "$1/server.err" 2>/dev/null | grep -c 'multicast plan [0-9]*: .* receptions, predicted' || true) plans"
}

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) printf "%.2f", v[(NR + 1) / 2]; else printf "%.2f", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
mib() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1048576 }'; }
load() { cut -d' ' -f1-3 /proc/loadavg; }

echo "dataflow: $CLUSTERS clusters x $WORKERS workers, $N producers of ${SIZE_MIB} MiB then $N consumers of all $N files; links: workers ${FAST_MBIT} Mbit/s, cluster uplinks ${SLOW_MBIT} Mbit/s, master ${MASTER_MBIT} Mbit/s; runs per mode: $REPEAT; load $(load)"
# Every cluster must take in the N - W files made in other clusters over its
# uplink at least once, whatever the plan: a bound of the topology that the
# HNOW and CDMD models, without shared links, do not see.
UPLINK_LB_S=$(awk -v n="$N" -v w="$WORKERS" -v b="$BYTES" -v r="$SLOW_MBIT" 'BEGIN { printf "%.2f", (n - w) * b * 8 / (r * 1e6) }')
echo "dataflow: uplink bound: each cluster takes in $((N - WORKERS)) files of ${SIZE_MIB} MiB over its ${SLOW_MBIT} Mbit/s uplink: at least $UPLINK_LB_S s with the outputs on the workers"
[ "$MCAST" = 1 ] || echo "dataflow: this cairn-server has no --multicast-plan: online is today's peer fetch (own cluster's holder first), without the flag"
ROWS=""
for a in "${MODE_LIST[@]}"; do
  case "$a" in
    WR|WRP|CDMD)
      if [ "$MCAST" = 0 ]; then
        echo "dataflow: $a: skipped: cairn-server --help lists no --multicast-plan, so the master cannot plan $a"
        if [ -n "${HOLDERS:-}" ]; then
          # the model still plans the last run's transfers
          mkdir -p "$WORK/model-$a"
          model "$a" "$WORK/model-$a"
          echo "dataflow: $a: $MODEL of the last run's holders: predicted $PRED_S s, lower bound $LB_S s"
          ROWS="$ROWS| $a | skipped: no --multicast-plan in this cairn-server | | | $MODEL | $PRED_S | $LB_S | |\n"
        else
          ROWS="$ROWS| $a | skipped: no --multicast-plan in this cairn-server | | | | | | |\n"
        fi
        continue
      fi ;;
  esac
  MS="" BM="" BP="" PR="" LB="" L0=$(load)
  for r in $(seq 1 "$REPEAT"); do
    run "$a-$r" "$a"
    MS="$MS $MAKESPAN" BM="$BM $BYTES_MASTER" BP="$BP $BYTES_PEER" PR="$PR $PRED_S" LB="$LB $LB_S"
    echo "dataflow: $a (run $r): level-2 makespan $MAKESPAN s; bytes served: master $BYTES_MASTER, peers $BYTES_PEER; holders $HOLDERS; $COPIES; $MODEL: predicted $PRED_S s, lower bound $LB_S s; load $(load)"
  done
  M=$(median <<<"$MS")
  BMM=$(median <<<"$BM")
  BPM=$(median <<<"$BP")
  # the holders differ from run to run, and so may the plan
  PRED_S=$(median <<<"$PR")
  LB_S=$(median <<<"$LB")
  echo "dataflow: $a: median level-2 makespan $M s; master served $(mib "$BMM") MiB, peers $(mib "$BPM") MiB; $MODEL: predicted $PRED_S s, lower bound $LB_S s ($(awk -v m="$M" -v b="$LB_S" 'BEGIN { printf "%.2f", (b > 0) ? m / b : 0 }')x the bound$([ "$a" != master-relay ] && awk -v m="$M" -v b="$UPLINK_LB_S" 'BEGIN { printf ", %.2fx the uplink bound", m / b }'))"
  ROWS="$ROWS| $a | $M | $(mib "$BMM") | $(mib "$BPM") | $MODEL | $PRED_S | $LB_S | $L0 → $(load) |\n"
done
echo
echo "| mode | level-2 makespan, median of $REPEAT (s) | master served (MiB) | peers served (MiB) | model | predicted (s) | lower bound (s) | load (1, 5, 15 min) |"
echo "|---|---|---|---|---|---|---|---|"
printf "%b" "$ROWS"
