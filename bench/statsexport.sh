#!/usr/bin/env bash
# statsexport.sh BIN [ACCOUNTS HOSTS] — what one XML statistics export
# costs (docs/project.md, "Statistics exports"): a real SQLite store
# filled with SQL with ACCOUNTS accounts (default 10^5, a third with a
# country, four in five in one of ACCOUNTS/100 teams) and HOSTS hosts
# (default 10^6, nine in ten attached to an account, every one with
# credit, half with an offer); then
#  - `cairn stats export --db` (the same export as the master's, in a
#    process of its own) under /usr/bin/time: wall time and peak RSS, at
#    a tenth of the population and at the whole, beside an empty store:
#    the peak stays flat (streaming: O(1) memory in the population);
#  - the master's own export on the whole store (`cairn stats export`
#    against a running cairn-server): its time, and the master's peak RSS
#    (VmHWM) before and after it.
# Prints one line per run and the files' sizes. Everything it starts it
# stops; its folder is removed at the end (KEEP=1 keeps it).
set -eu
BIN=$(cd "${1:-build-release/bin}" && pwd)
ACCOUNTS=${2:-100000}
HOSTS=${3:-1000000}
dir=$(mktemp -d "${TMPDIR:-/tmp}/cairn-bench-statsexport-XXXXXX")
server_pid=""
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
  [ "${KEEP:-0}" = 1 ] && echo "kept $dir" || rm -rf "$dir"
}
trap cleanup EXIT
export CAIRN_ADMIN_TOKEN=bench-admin-token-0123456789abcdef

# A master opens a fresh store once (the schema), prints its URL; stopped.
start_server() { # start_server DB EXTRA...: sets server_pid and url
  local db=$1 log=$dir/server.log
  shift
  "$BIN/cairn-server" --db "$db" --listen 127.0.0.1:0 --no-fsync "$@" > "$log" 2>&1 &
  server_pid=$!
  for _ in $(seq 1200); do
    url=$(sed -n 's/^cairn-server listening on //p' "$log")
    [ -n "$url" ] && return 0
    sleep 0.05
  done
  echo "statsexport: cairn-server did not start: $(cat "$log")" >&2
  exit 1
}
stop_server() { kill "$server_pid"; wait "$server_pid" || true; server_pid=""; }
make_store() { # make_store DB ACCOUNTS HOSTS
  local db=$1 na=$2 nh=$3 nt=$(( $2 / 100 + 1 ))
  start_server "$db" --stats-export-hours 0
  stop_server
  sqlite3 "$db" <<SQL
BEGIN;
WITH RECURSIVE n(i) AS (SELECT 1 WHERE $na > 0 UNION ALL SELECT i + 1 FROM n WHERE i < $na)
INSERT INTO accounts(id, name, email, email_key, key_hash, password_hash, created, credit,
                     cpu_seconds, results, expavg_credit, expavg_time, country,
                     cross_project_id)
SELECT i, 'volunteer number ' || i, 'User' || i || '@example.org', 'user' || i || '@example.org',
       'k', 'p', 1700000000 + i, (i * 7919) % 100003 + 0.25, i % 1000, i % 97, (i % 1000) / 7.0,
       1790000000 + i, CASE WHEN i % 3 = 0 THEN 'Norway' ELSE '' END, lower(hex(randomblob(16)))
FROM n;
WITH RECURSIVE n(i) AS (SELECT 1 WHERE $na > 0 UNION ALL SELECT i + 1 FROM n WHERE i < $nt)
INSERT INTO teams(id, key, name, founder, created, description, url, country)
SELECT i, 'team-' || i, 'Team & ' || i, (i * 37) % $na + 1, 1700000000 + i,
       'A team of <volunteers> number ' || i, 'https://team' || i || '.example/', 'Norway' FROM n;
INSERT INTO team_credit(team, credit, cpu_seconds, results)
  SELECT key, id * 1000.5, id * 900, id * 10 FROM teams;
INSERT INTO team_expavg(team, expavg_credit, expavg_time)
  SELECT key, id * 3.5, 1790000000 + id FROM teams;
UPDATE accounts SET team_id = id % $nt + 1 WHERE id % 5 <> 0;
WITH RECURSIVE n(i) AS (SELECT 1 WHERE $nh > 0 UNION ALL SELECT i + 1 FROM n WHERE i < $nh)
INSERT INTO volunteers(id, name, cluster, apps, slots, token_hash, created, team, credit,
                       cpu_seconds, credited, account_id, expavg_credit, expavg_time,
                       host_cpid)
SELECT i, 'host-' || i, 'c', CASE WHEN i % 2 THEN '["a","@linux-x86_64"]' ELSE '["a"]' END,
       1 + i % 8, printf('%064x', i), 1700000000 + i, 'team-' || (i % $nt + 1),
       (i * 7919) % 100003 + 0.5, i % 1000, i % 97, CASE WHEN i % 10 THEN i % $na + 1 END,
       (i % 1000) / 3.0, 1790000000 + i, lower(hex(randomblob(16)))
FROM n;
INSERT INTO volunteer_offers(volunteer_id, cores, memory_mib, disk_mib)
  SELECT id, 4, 8192, 100000 FROM volunteers WHERE id % 2 = 0;
COMMIT;
SQL
}
# One export of DB by `cairn stats export --db` under /usr/bin/time.
offline() { # offline LABEL DB
  local out=$dir/out-$1 t
  t=$( { /usr/bin/time -f 'time %e s (CPU %U s user, %S s sys), peak RSS %M KiB' \
           "$BIN/cairn" stats export --db "$2" --out "$out" > "$dir/cli.out"; } 2>&1 )
  printf '%-28s %s  (%s)\n' "$1" "$t" "$(sed 's/^export 1: //; s/, in .*//' "$dir/cli.out")"
}
hwm() { sed -n 's/^VmHWM:[[:space:]]*//p' "/proc/$1/status"; }

echo "statsexport: $ACCOUNTS accounts, $HOSTS hosts ($(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg))"
t0=$(date +%s.%N)
make_store "$dir/empty.db" 0 0
make_store "$dir/tenth.db" $(( ACCOUNTS / 10 )) $(( HOSTS / 10 ))
make_store "$dir/full.db" "$ACCOUNTS" "$HOSTS"
printf 'stores filled with SQL in %.1f s (full: %s MiB)\n' \
  "$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')" \
  "$(( $(stat -c %s "$dir/full.db") / 1048576 ))"
offline "empty store" "$dir/empty.db"
offline "$(( ACCOUNTS / 10 )) accounts, $(( HOSTS / 10 )) hosts" "$dir/tenth.db"
offline "$ACCOUNTS accounts, $HOSTS hosts" "$dir/full.db"
ls -l "$dir/out-$ACCOUNTS accounts, $HOSTS hosts" | awk 'NR > 1 { printf "  %-10s %12d bytes\n", $9, $5 }'

# The master's own export, on its exporter thread, of the full store.
start_server "$dir/full.db" --stats-export-hours 0 --stats-dir "$dir/master-stats"
before=$(hwm "$server_pid")
line=$("$BIN/cairn" stats export --server "$url" --timeout 3600)
after=$(hwm "$server_pid")
stop_server
echo "master: ${line#export 1: }"
echo "master: peak RSS (VmHWM) $before before the export, $after after"
