#!/usr/bin/env bash
# HTTP benchmark (not a test): how much does an honest /readyz cost?
#
#   scripts/bench-http.sh [seconds per run, default 10]
#
# 1. wrk against checkout's /readyz (plain, ?verbose, application/health+json) and, in the same
#    run, against a bare axum handler returning a static 200; prints requests/s and p99 for each
#    and the ratio to the bare handler (target: /readyz ≥ 0.9 × bare).
# 2. The database work health checks cause while /readyz is hammered, from PostgreSQL's own
#    statistics (pg_stat_database on a database only this run uses): it must stay at one
#    query per check interval per instance, however many probes arrive (seed 003).
set -euo pipefail
cd "$(dirname "$0")/.."

duration=${1:-10}
threads=2
connections=32
main_port=18080 admin_port=18081 bare_port=18099
pg_port=18090 pg_admin_port=18091
database=probity_bench

command -v wrk >/dev/null || { echo "wrk not found: apt-get install wrk" >&2; exit 2; }
cargo build --quiet --release -p checkout --bin checkout
cargo build --quiet --release -p probity-drill --example bare_axum

work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

wait_http() { # url
  for _ in $(seq 1 200); do
    curl -fsS -o /dev/null "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "timed out waiting for $1" >&2
  exit 1
}

target/release/checkout --listen 127.0.0.1:$main_port --admin-listen 127.0.0.1:$admin_port \
  --data-dir "$work/sqlite" >"$work/checkout.log" 2>&1 &
pids+=($!)
target/release/examples/bare_axum 127.0.0.1:$bare_port >"$work/bare.log" 2>&1 &
pids+=($!)
wait_http "http://127.0.0.1:$main_port/readyz"
wait_http "http://127.0.0.1:$bare_port/readyz"

run_wrk() { # name url [header]
  local name=$1 url=$2 header=${3:-}
  local output
  if [ -n "$header" ]; then
    output=$(wrk -t$threads -c$connections -d"${duration}s" --latency -H "$header" "$url")
  else
    output=$(wrk -t$threads -c$connections -d"${duration}s" --latency "$url")
  fi
  local rps p99 non2xx
  rps=$(awk '/^Requests\/sec:/ {print $2}' <<<"$output")
  p99=$(awk '$1 == "99%" {print $2}' <<<"$output")
  non2xx=$(awk '/Non-2xx or 3xx responses:/ {print $5}' <<<"$output")
  printf '%-28s %12s req/s   p99 %8s   non-2xx %s\n' "$name" "$rps" "$p99" "${non2xx:-0}"
  echo "$rps" >"$work/$name.rps"
}

echo "wrk -t$threads -c$connections -d${duration}s on $(nproc) cores"
run_wrk bare-axum "http://127.0.0.1:$bare_port/readyz"
run_wrk readyz "http://127.0.0.1:$main_port/readyz"
run_wrk readyz-verbose "http://127.0.0.1:$main_port/readyz?verbose"
run_wrk readyz-health-json "http://127.0.0.1:$main_port/readyz" "Accept: application/health+json"
bare=$(cat "$work/bare-axum.rps")
for name in readyz readyz-verbose readyz-health-json; do
  awk -v n="$name" -v r="$(cat "$work/$name.rps")" -v b="$bare" \
    'BEGIN { printf "%-28s %.2f × bare (target ≥ 0.90)\n", n, r / b }'
done

# --- database load from health checks ---------------------------------------------------------
if ! psql -h 127.0.0.1 -U postgres -d postgres -qtAc 'select 1' >/dev/null 2>&1; then
  echo "PostgreSQL unreachable at 127.0.0.1:5432: skipping the database-load measurement" >&2
  exit 0
fi
psql -h 127.0.0.1 -U postgres -d postgres -qtAc "drop database if exists $database" >/dev/null
psql -h 127.0.0.1 -U postgres -d postgres -qtAc "create database $database" >/dev/null
target/release/checkout --listen 127.0.0.1:$pg_port --admin-listen 127.0.0.1:$pg_admin_port \
  --database-url "postgres://postgres@127.0.0.1:5432/$database" >"$work/checkout-pg.log" 2>&1 &
pids+=($!)
wait_http "http://127.0.0.1:$pg_port/readyz"
interval_ms=$(target/release/checkout --print-contract --database-url "postgres://postgres@127.0.0.1:5432/$database" |
  python3 -c 'import json,sys; c=json.load(sys.stdin); print(next(x["interval_ms"] for x in c["checks"] if x["name"]=="db"))')

transactions() {
  psql -h 127.0.0.1 -U postgres -d postgres -qtAc \
    "select pg_stat_force_next_flush(); select xact_commit + xact_rollback from pg_stat_database where datname = '$database'" |
    tail -n 1
}
measure() { # seconds → transactions per second
  local before after
  before=$(transactions)
  sleep "$1"
  after=$(transactions)
  awk -v a="$after" -v b="$before" -v s="$1" 'BEGIN { printf "%.2f", (a - b) / s }'
}

idle=$(measure "$duration")
wrk -t$threads -c$connections -d"${duration}s" "http://127.0.0.1:$pg_port/readyz" >"$work/wrk-pg.txt" &
wrk_pid=$!
sleep 0.5
loaded=$(measure "$((duration - 1))")
wait $wrk_pid
probes=$(awk '/^Requests\/sec:/ {print $2}' "$work/wrk-pg.txt")
echo
echo "database transactions/s with /readyz idle:       $idle"
echo "database transactions/s with /readyz at $probes req/s: $loaded"
awk -v i="$interval_ms" 'BEGIN { printf "expected from the db check alone:                %.2f (one per %d ms)\n", 1000 / i, i }'
psql -h 127.0.0.1 -U postgres -d postgres -qtAc "drop database if exists $database with (force)" >/dev/null || true
