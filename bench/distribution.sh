#!/usr/bin/env bash
# distribution.sh BIN [--clusters C] [--workers W] [--size-mib S]
#                     [--fast-mbit F] [--slow-mbit L] [--master-mbit M]
#                     [--plans A,B,...] [--repeat R] [--uplinks A,B,...]
#                     [--warm-mib W] [--store-and-forward]
# Broadcast-input distribution over real, rate-shaped links: a master and
# C clusters of W workers, each in its own network namespace. Every worker
# runs one task that needs the same S MiB input; the makespan (from the job's
# submission until every worker holds the verified file) is measured with
# the input marked "broadcast" under each planner of --plans (the master's
# --broadcast-plan), and once without "broadcast" (master-serves-all), each
# R times (medians reported), and compared with each plan's own prediction
# and lower bound and with the 1/C model of the topology (cairn plan).
# --uplinks gives each cluster its own uplink rate; --warm-mib first
# broadcasts a W MiB file on the same master, so that the measured run is
# planned with measured rates. A planner written A/saf runs on a master
# started with --store-and-forward (no cut-through relays); with
# --store-and-forward every planner of --plans runs both ways, A and A/saf.
# Environment variables CAIRN_DIST_CLUSTERS, CAIRN_DIST_WORKERS,
# CAIRN_DIST_SIZE_MIB, CAIRN_DIST_FAST_MBIT, CAIRN_DIST_SLOW_MBIT,
# CAIRN_DIST_MASTER_MBIT, CAIRN_DIST_PLANS, CAIRN_DIST_REPEAT,
# CAIRN_DIST_UPLINKS, CAIRN_DIST_WARM_MIB, CAIRN_DIST_SAF=1 set the same
# options; CAIRN_DIST_KEEP=1 keeps the logs (each master logs its plans and
# source decisions at info level). Needs root (network namespaces, veth, bridges, tc tbf); without
# them it says so in one line and exits 0.
set -eu

BIN=build-release/bin
if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then
  BIN=$1
  shift
fi
CLUSTERS=${CAIRN_DIST_CLUSTERS:-4}
WORKERS=${CAIRN_DIST_WORKERS:-4}
SIZE_MIB=${CAIRN_DIST_SIZE_MIB:-64}
FAST_MBIT=${CAIRN_DIST_FAST_MBIT:-1000}
SLOW_MBIT=${CAIRN_DIST_SLOW_MBIT:-100}
MASTER_MBIT=${CAIRN_DIST_MASTER_MBIT:-$SLOW_MBIT}
PLANS=${CAIRN_DIST_PLANS:-lcf,bounded-degree,ECEF,ECEF-LA,ECEF-LAt,ECEF-LAT,online}
REPEAT=${CAIRN_DIST_REPEAT:-1}
UPLINKS=${CAIRN_DIST_UPLINKS:-}
WARM_MIB=${CAIRN_DIST_WARM_MIB:-0}
SAF=${CAIRN_DIST_SAF:-0}
while [ $# -gt 0 ]; do
  case "$1" in
    --clusters) CLUSTERS=$2; shift 2 ;;
    --workers) WORKERS=$2; shift 2 ;;
    --size-mib) SIZE_MIB=$2; shift 2 ;;
    --fast-mbit) FAST_MBIT=$2; shift 2 ;;
    --slow-mbit) SLOW_MBIT=$2; shift 2 ;;
    --master-mbit) MASTER_MBIT=$2; shift 2 ;;
    --plans) PLANS=$2; shift 2 ;;
    --repeat) REPEAT=$2; shift 2 ;;
    --uplinks) UPLINKS=$2; shift 2 ;;
    --warm-mib) WARM_MIB=$2; shift 2 ;;
    --store-and-forward) SAF=1; shift ;;
    -h|--help) sed -n '2,26p' "$0"; exit 0 ;;
    *) echo "distribution: unknown option $1" >&2; exit 2 ;;
  esac
done
for v in CLUSTERS WORKERS SIZE_MIB FAST_MBIT SLOW_MBIT MASTER_MBIT REPEAT; do
  case "${!v}" in
    ''|*[!0-9]*|0*) echo "distribution: $v must be a positive integer" >&2; exit 2 ;;
  esac
done
if [ "$CLUSTERS" -gt 250 ] || [ "$WORKERS" -gt 200 ]; then
  echo "distribution: at most 250 clusters of 200 workers" >&2
  exit 2
fi
case "$WARM_MIB" in
  ''|*[!0-9]*) echo "distribution: WARM_MIB must be a non-negative integer" >&2; exit 2 ;;
esac
# UP[i]: cluster i's uplink in Mbit/s
UP=()
if [ -n "$UPLINKS" ]; then
  IFS=, read -r -a UP <<<"$UPLINKS"
  if [ "${#UP[@]}" != "$CLUSTERS" ]; then
    echo "distribution: --uplinks must list $CLUSTERS rates" >&2
    exit 2
  fi
  for r in "${UP[@]}"; do
    case "$r" in
      ''|*[!0-9]*|0*) echo "distribution: uplink rates must be positive integers" >&2; exit 2 ;;
    esac
  done
else
  for _ in $(seq 1 "$CLUSTERS"); do UP+=("$SLOW_MBIT"); done
fi
IFS=, read -r -a PLAN_LIST <<<"$PLANS"
if [ "$SAF" = 1 ]; then
  BOTH=()
  for a in "${PLAN_LIST[@]}"; do BOTH+=("$a" "${a%/saf}/saf"); done
  PLAN_LIST=("${BOTH[@]}")
fi
for a in "${PLAN_LIST[@]}"; do
  case "${a%/saf}" in
    online|lcf|bounded-degree|flat|FEF|ECEF|ECEF-LA|ECEF-LAt|ECEF-LAT|BottomUp) ;;
    *) echo "distribution: unknown planner \"$a\" in --plans" >&2; exit 2 ;;
  esac
done
BIN=$(cd "$BIN" && pwd)
for b in cairn-server cairn-worker cairn; do
  [ -x "$BIN/$b" ] || { echo "distribution: $BIN/$b missing (build first)" >&2; exit 1; }
done
for t in ip tc curl jq awk; do
  command -v "$t" >/dev/null || { echo "distribution: skipped: $t not installed"; exit 0; }
done
if [ "$(id -u)" != 0 ]; then
  echo "distribution: skipped: needs root for network namespaces and tc"
  exit 0
fi

N=$((CLUSTERS * WORKERS))
P=cdist$$
PORT=7000
MASTER_IP=10.200.0.2
URL=http://$MASTER_IP:$PORT
WORK=$(mktemp -d "${TMPDIR:-/tmp}/cairn-distribution.XXXXXX")
# shellcheck disable=SC2034 # read by bench/lib/netns.sh
NSLIST=()
PIDS=()
. "$(dirname "$0")/lib/netns.sh"

cleanup() {
  local pid
  for pid in "${PIDS[@]+"${PIDS[@]}"}"; do
    kill "$pid" 2>/dev/null || true
  done
  for pid in "${PIDS[@]+"${PIDS[@]}"}"; do
    wait "$pid" 2>/dev/null || true
  done
  netns_delete
  if [ -n "${CAIRN_DIST_KEEP:-}" ]; then
    echo "distribution: logs kept in $WORK"
  else
    rm -rf "$WORK"
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

skip() {
  echo "distribution: skipped: $1"
  exit 0
}

# ---- topology (bench/lib/netns.sh) -----------------------------------------
netns_topology

# ---- the input, the app and the model ----------------------------------------
head -c "$((SIZE_MIB * 1048576))" /dev/urandom >"$WORK/data.bin"
[ "$WARM_MIB" -gt 0 ] && head -c "$((WARM_MIB * 1048576))" /dev/urandom >"$WORK/warm.bin"
SHA=$(sha256sum "$WORK/data.bin" | cut -d' ' -f1)
# The task records when it started (its input verified and in place), waits
# for the benchmark to release it (so every worker stays up to serve peers
# and takes exactly one task), then prints the input's SHA-256.
# With "warm" as second argument it is a warm-up task: it waits for
# $1/warm-release instead and prints nothing.
cat >"$WORK/hold.sh" <<'EOF'
#!/bin/sh
set -eu
if [ "${2:-}" = warm ]; then
  : >"$1/warm/$CAIRN_TASK_ID"
  n=0
  while [ ! -e "$1/warm-release" ]; do
    n=$((n + 1))
    [ "$n" -gt 3000 ] && exit 3
    sleep 0.1
  done
  exit 0
fi
now=$(date +%s.%N)
printf '%s %s\n' "$now" "$CAIRN_DIST_CLUSTER" >"$1/held/$CAIRN_TASK_ID.tmp"
mv "$1/held/$CAIRN_TASK_ID.tmp" "$1/held/$CAIRN_TASK_ID"
n=0
while [ ! -e "$1/release" ]; do
  n=$((n + 1))
  [ "$n" -gt 3000 ] && exit 3
  sleep 0.2
done
sha256sum inputs/data | cut -d' ' -f1
EOF
chmod +x "$WORK/hold.sh"

export CAIRN_ADMIN_TOKEN
CAIRN_ADMIN_TOKEN=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')

# 1/C instance: the master is a cluster of one (the source), each worker
# cluster has W members; a local transfer (fast link) is the time unit, an
# inter-cluster one takes C = fast/slow units. The second instance gives
# every cluster degree 1: one inter-cluster transfer at a time per uplink.
UNIT_S=$(awk -v s="$SIZE_MIB" -v f="$FAST_MBIT" 'BEGIN { printf "%.6f", s * 8388608 / (f * 1e6) }')
CMOD=$(awk -v f="$FAST_MBIT" -v l="$SLOW_MBIT" 'BEGIN { c = int(f / l + 0.5); print c < 1 ? 1 : c }')
instance() { # DEGREE_FIELD
  printf '{"model": "1/C", "C": %d, "source": 0, "clusters": [{"size": 1%s}' "$CMOD" "$1"
  for _ in $(seq 1 "$CLUSTERS"); do printf ', {"size": %d%s}' "$WORKERS" "$1"; done
  printf ']}\n'
}
instance "" >"$WORK/model.json"
instance ', "degree": 1' >"$WORK/model-uplink.json"
"$BIN/cairn" plan lcf "$WORK/model.json" >"$WORK/plan.json"
"$BIN/cairn" plan bounded-degree "$WORK/model-uplink.json" >"$WORK/plan-uplink.json"
# Grid instance ([BSM] §3) of the same topology, in seconds, for the grid
# heuristics: the master is cluster 0; g_ij = one copy over the slower of
# i's and j's links (the master's, or the clusters' uplinks); L = 0;
# T_i = ceil(log2 W) local copies.
awk -v c="$CLUSTERS" -v w="$WORKERS" -v s="$SIZE_MIB" -v ups="${UP[*]}" -v m="$MASTER_MBIT" \
    -v u="$UNIT_S" 'BEGIN {
  split(ups, up, " "); up[0] = m
  t = 0; for (n = 1; n < w; n *= 2) t++
  k = c + 1
  printf "{\"model\": \"grid\", \"root\": 0, \"T\": [0"
  for (i = 1; i < k; i++) printf ", %.6f", t * u
  printf "],\n \"L\": ["
  for (i = 0; i < k; i++) {
    printf "%s[", i ? ", " : ""
    for (j = 0; j < k; j++) printf "%s%s", j ? ", " : "", i == j ? "null" : "0"
    printf "]"
  }
  printf "],\n \"g\": ["
  for (i = 0; i < k; i++) {
    printf "%s[", i ? ", " : ""
    for (j = 0; j < k; j++)
      printf "%s%s", j ? ", " : "", i == j ? "null" : sprintf("%.6f", s * 8388608 / ((up[i] < up[j] ? up[i] : up[j]) * 1e6))
    printf "]"
  }
  printf "]}\n"
}' >"$WORK/model-grid.json"
# model ALGO: "predicted X s, lower bound Y s" of the topology's instance
model() {
  case "${1%/saf}" in
    online) echo "no plan" ;;
    lcf) echo "predicted $(secs "$LCF_U") s, lower bound $(secs "$LB_U") s (1/C)" ;;
    bounded-degree) echo "predicted $(secs "$UP_U") s, lower bound $(secs "$UPLB_U") s (1/C, degree 1)" ;;
    *) "$BIN/cairn" plan "${1%/saf}" "$WORK/model-grid.json" >"$WORK/plan-${1%/saf}.json" &&
         jq -r '"predicted \(.makespan * 100 | round / 100) s, lower bound \(.lower_bound * 100 | round / 100) s (grid)"' "$WORK/plan-${1%/saf}.json" ;;
  esac
}
secs() { awk -v u="$1" -v k="$UNIT_S" 'BEGIN { printf "%.2f", u * k }'; }
LCF_U=$(jq .makespan "$WORK/plan.json")
LB_U=$(jq .lower_bound "$WORK/plan.json")
UP_U=$(jq .makespan "$WORK/plan-uplink.json")
UPLB_U=$(jq .lower_bound "$WORK/plan-uplink.json")

# ---- one run ---------------------------------------------------------------
# run NAME BROADCAST PLANNER[/saf]: a fresh master (with
# --store-and-forward for PLANNER/saf) and fresh workers; sets
# MAKESPAN, BYTES_MASTER, BYTES_PEER, SECONDS_TO_ALL, PLAN (the master's
# last plan);
# per-worker times in $WORK/NAME/times.
run() {
  local name=$1 bcast=$2 d=$WORK/$1 spid pid i j t0 deadline now held state bad saf=()
  mkdir -p "$d/held"
  [ "${3%/saf}" != "$3" ] && saf=(--store-and-forward)
  ip netns exec "$P-m" "$BIN/cairn-server" --db "$d/cairn.db" --listen "$MASTER_IP:$PORT" \
    --no-fsync --log-level info --broadcast-plan "${3%/saf}" "${saf[@]}" >"$d/server.out" 2>"$d/server.err" &
  spid=$!
  PIDS+=("$spid")
  for _ in $(seq 1 100); do
    grep -q listening "$d/server.out" 2>/dev/null && break
    kill -0 "$spid" 2>/dev/null || { echo "distribution: FAILED: cairn-server did not start: $(cat "$d/server.err")"; exit 1; }
    sleep 0.1
  done
  ip netns exec "$P-c${CLUSTERS}w$WORKERS" curl -sf -m 5 -o /dev/null "$URL/healthz" ||
    { echo "distribution: FAILED: a worker namespace cannot reach the master at $URL"; exit 1; }
  # job NAME PATH BROADCAST [ARG]: a job of N tasks reading PATH as NAME
  job() {
    printf '{"name": "distribution-%s-%s", "app": "hold", "policy": "fifo", "lease_seconds": 60,\n' "$name" "$1"
    printf ' "max_attempts": 3, "files": [{"name": "%s", "path": "%s", "broadcast": %s}],\n' "$1" "$2" "$3"
    printf ' "tasks": ['
    for i in $(seq 1 "$N"); do
      [ "$i" -gt 1 ] && printf ', '
      printf '{"id": "t%d", "args": ["%s"%s], "inputs": ["%s"]}' "$i" "$d" "${4:+, \"$4\"}" "$1"
    done
    printf ']}\n'
  }
  job data "$WORK/data.bin" "$bcast" >"$d/job.json"
  local tasks=1
  if [ "$WARM_MIB" -gt 0 ]; then
    # warm-up: every worker takes one task of a broadcast of warm.bin and
    # holds it until all have, so the master has measured rates before the
    # measured job is submitted
    tasks=2
    mkdir -p "$d/warm"
    job warm "$WORK/warm.bin" true warm >"$d/warm.json"
    ip netns exec "$P-m" "$BIN/cairn" submit "$d/warm.json" --server "$URL" >/dev/null
  else
    JOB=$(ip netns exec "$P-m" "$BIN/cairn" submit "$d/job.json" --server "$URL")
    t0=$EPOCHREALTIME
  fi
  for i in $(seq 1 "$CLUSTERS"); do
    for j in $(seq 1 "$WORKERS"); do
      ip netns exec "$P-c${i}w$j" env "CAIRN_DIST_CLUSTER=c$i" "$BIN/cairn-worker" --server "$URL" --app "hold=$WORK/hold.sh" \
        --cluster "c$i" --name "c${i}w$j" --dir "$d/w-c${i}w$j" --slots 1 --max-tasks "$tasks" \
        --peer-listen 0.0.0.0:0 2>"$d/worker-c${i}w$j.err" >/dev/null &
      pid=$!
      PIDS+=("$pid")
      echo "$pid c$i" >>"$d/workers"
    done
  done
  if [ "$WARM_MIB" -gt 0 ]; then
    deadline=$(awk -v t="$EPOCHREALTIME" -v s="$WARM_MIB" -v m="$MASTER_MBIT" -v n="$N" \
      'BEGIN { printf "%d", t + 60 + 3 * n * s * 8.4 / m }')
    while [ "$(find "$d/warm" -maxdepth 1 -name 't*' | wc -l)" -lt "$N" ]; do
      if [ "${EPOCHREALTIME%.*}" -ge "$deadline" ]; then
        echo "distribution: FAILED: $name: the warm-up broadcast did not reach every worker"
        tail -n 3 "$d"/worker-*.err "$d/server.err" 2>/dev/null | sed 's/^/  /'
        exit 1
      fi
      sleep 0.1
    done
    JOB=$(ip netns exec "$P-m" "$BIN/cairn" submit "$d/job.json" --server "$URL")
    t0=$EPOCHREALTIME
    touch "$d/warm-release"
  fi
  # every worker holds the file once its task has started
  deadline=$(awk -v t="$t0" -v s="$SIZE_MIB" -v m="$MASTER_MBIT" -v n="$N" \
    'BEGIN { printf "%d", t + 60 + 3 * n * s * 8.4 / m }')
  held=0
  while :; do
    held=$(find "$d/held" -maxdepth 1 -name 't*' ! -name '*.tmp' | wc -l)
    [ "$held" -ge "$N" ] && break
    now=${EPOCHREALTIME%.*}
    if [ "$now" -ge "$deadline" ]; then
      echo "distribution: FAILED: $name: only $held of $N workers hold the file after $((now - ${t0%.*})) s"
      state=$(curl -s -H "Authorization: Bearer $CAIRN_ADMIN_TOKEN" "$URL/v1/jobs/$JOB" 2>/dev/null || true)
      echo "distribution: job status: $state"
      tail -n 3 "$d"/worker-*.err "$d/server.err" 2>/dev/null | sed 's/^/  /'
      exit 1
    fi
    sleep 0.1
  done
  for i in $(seq 1 "$N"); do
    awk -v t0="$t0" -v t="t$i" '{ printf "%s %.3f %s\n", t, $1 - t0, $2 }' "$d/held/t$i"
  done >"$d/times"
  MAKESPAN=$(awk '$2 > m { m = $2 } END { printf "%.2f", m }' "$d/times")
  # served bytes reach the master with the workers' next heartbeats
  for _ in $(seq 1 60); do
    state=$(ip netns exec "$P-m" curl -s -H "Authorization: Bearer $CAIRN_ADMIN_TOKEN" "$URL/v1/jobs/$JOB")
    BYTES_MASTER=$(jq '.bytes_served.master // 0' <<<"$state")
    BYTES_PEER=$(jq '.bytes_served.peer // 0' <<<"$state")
    [ $((BYTES_MASTER + BYTES_PEER)) -ge $((N * SIZE_MIB * 1048576)) ] && break
    sleep 0.25
  done
  SECONDS_TO_ALL=$(jq -r '(.broadcast_files // [])[0].seconds_to_all // "n/a"' <<<"$state")
  PLAN=$(jq -r '(.broadcast_files // [])[0].plan | if . == null then "none" else
    "built at \(.built_s) s with \(.informed) clusters informed: predicted \(.predicted_s * 100 | round / 100) s, lower bound \(.lower_bound_s * 100 | round / 100) s from then" end' <<<"$state")
  touch "$d/release"
  if ! ip netns exec "$P-m" "$BIN/cairn" wait "$JOB" --server "$URL" --timeout 120 >/dev/null; then
    echo "distribution: FAILED: $name: job $JOB did not finish"
    exit 1
  fi
  ip netns exec "$P-m" curl -s -H "Authorization: Bearer $CAIRN_ADMIN_TOKEN" "$URL/v1/jobs/$JOB/tasks" >"$d/tasks.json"
  bad=$(jq --arg s "$SHA" '[.tasks[] | select(.state != "done" or (.output | rtrimstr("\n")) != $s)] | length' "$d/tasks.json")
  if [ "$bad" != 0 ]; then
    echo "distribution: FAILED: $name: $bad tasks did not read the right file"
    exit 1
  fi
  while read -r pid _; do wait "$pid" 2>/dev/null || true; done <"$d/workers"
  kill "$spid" 2>/dev/null || true
  wait "$spid" 2>/dev/null || true
  PIDS=()
}

# seconds at which each worker of a cluster held the file, per cluster
per_cluster() {
  local i
  for i in $(seq 1 "$CLUSTERS"); do
    printf ' c%d' "$i"
    awk -v c="c$i" '$3 == c { print $2 }' "$WORK/$1/times" | sort -n |
      awk '{ printf "%s%.1f", NR == 1 ? " " : ",", $1 }'
  done
}

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) printf "%.2f", v[(NR + 1) / 2]; else printf "%.2f", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "distribution: $CLUSTERS clusters x $WORKERS workers, ${SIZE_MIB} MiB; links: workers ${FAST_MBIT} Mbit/s, cluster uplinks $(IFS=,; echo "${UP[*]}") Mbit/s, master ${MASTER_MBIT} Mbit/s; warm-up broadcast: ${WARM_MIB} MiB; runs per configuration: $REPEAT"
LCF_S=$(secs "$LCF_U")
LB_S=$(secs "$LB_U")
UP_S=$(secs "$UP_U")
UPLB_S=$(secs "$UPLB_U")
echo "distribution: model 1/C (unit ${UNIT_S} s = one local copy, C=$CMOD): lcf ${LCF_U} units = ${LCF_S} s, lower bound ${LB_U} units = ${LB_S} s"
echo "distribution: model 1/C, one inter-cluster copy per uplink (degree 1): bounded-degree ${UP_U} units = ${UP_S} s, lower bound ${UPLB_U} units = ${UPLB_S} s"
ALL=""
for r in $(seq 1 "$REPEAT"); do
  run "master-all-$r" false online
  ALL="$ALL $MAKESPAN"
  echo "distribution: master-serves-all (run $r): makespan ${MAKESPAN} s; bytes served: master $BYTES_MASTER, peers $BYTES_PEER"
done
A_MS=$(median <<<"$ALL")
SUMMARY="master_all_s=$A_MS"
BEST="" BEST_MS="" BEST_ECEF="" BEST_ECEF_MS=""
for a in "${PLAN_LIST[@]}"; do
  MS=""
  for r in $(seq 1 "$REPEAT"); do
    rn=${a/\/saf/-saf}-$r
    run "$rn" true "$a"
    MS="$MS $MAKESPAN"
    echo "distribution: $a (run $r): makespan ${MAKESPAN} s (master: seconds_to_all ${SECONDS_TO_ALL}); bytes served: master $BYTES_MASTER, peers $BYTES_PEER; the master's last plan: $PLAN"
    echo "distribution: $a (run $r): seconds until each worker held the file, by cluster:$(per_cluster "$rn")"
  done
  M=$(median <<<"$MS")
  SP=$(awk -v a="$A_MS" -v p="$M" 'BEGIN { printf "%.2f", a / p }')
  echo "distribution: $a: model of this topology: $(model "$a")"
  echo "distribution: $a: median makespan ${M} s; ${SP}x faster than master-serves-all; $(awk -v p="$M" -v b="$UPLB_S" 'BEGIN { printf "%.2f", p / b }')x the degree-1 lower bound, $(awk -v p="$M" -v b="$LB_S" 'BEGIN { printf "%.2f", p / b }')x the 1/C lower bound"
  SUMMARY="$SUMMARY ${a/\/saf/_saf}_s=$M"
  declare -g "MED_${a//[^A-Za-z0-9]/_}=$M"
  if [ "${a%/saf}" != "$a" ]; then
    CT=MED_${a%/saf}
    CT=${CT//[^A-Za-z0-9]/_}
    if [ -n "${!CT:-}" ]; then
      echo "distribution: ${a%/saf}: cut-through ${!CT} s against store-and-forward $M s: $(awk -v c="${!CT}" -v s="$M" 'BEGIN { printf "%.2f", s / c }')x faster"
    fi
  fi
  if [ -z "$BEST_MS" ] || awk -v m="$M" -v b="$BEST_MS" 'BEGIN { exit !(m < b) }'; then
    BEST=$a BEST_MS=$M
  fi
  case "$a" in
    ECEF*) if [ -z "$BEST_ECEF_MS" ] || awk -v m="$M" -v b="$BEST_ECEF_MS" 'BEGIN { exit !(m < b) }'; then
             BEST_ECEF=$a BEST_ECEF_MS=$M
           fi ;;
  esac
done
[ -n "$BEST_ECEF" ] && echo "distribution: best ECEF variant: $BEST_ECEF ($BEST_ECEF_MS s)"
SPEEDUP=$(awk -v a="$A_MS" -v p="$BEST_MS" 'BEGIN { printf "%.2f", a / p }')
RATIO_LB=$(awk -v p="$BEST_MS" -v b="$LB_S" 'BEGIN { printf "%.2f", p / b }')
RATIO_UPLB=$(awk -v p="$BEST_MS" -v b="$UPLB_S" 'BEGIN { printf "%.2f", p / b }')
G1=$(awk -v s="$SPEEDUP" 'BEGIN { print (s >= 3 ? "met" : "NOT met") }')
G2=$(awk -v r="$RATIO_UPLB" 'BEGIN { print (r <= 1.3 ? "met" : "NOT met") }')
echo "distribution: best planner $BEST: goal >= 3x faster than master-serves-all: $G1 (${SPEEDUP}x); goal <= 1.3x the degree-1 lower bound: $G2 (${RATIO_UPLB}x; ${RATIO_LB}x the 1/C lower bound)"
echo "distribution: clusters=$CLUSTERS workers=$WORKERS size_mib=$SIZE_MIB repeat=$REPEAT $SUMMARY best=$BEST best_s=$BEST_MS speedup=$SPEEDUP model_lcf_s=$LCF_S lower_bound_s=$LB_S uplink_model_s=$UP_S uplink_lower_bound_s=$UPLB_S"
