#!/usr/bin/env bash
# Busy is not broken, measured (not a test): order traffic at rising concurrency against the
# README's main job, while /readyz is polled as a load balancer would.
#
#   scripts/busy-sweep.sh [sqlite|postgres] [seconds per step, default 20] [concurrencies...]
#
# For each concurrency (default 1 2 4 8 16 32 64 connections, the pool holds 5) wrk sends
# `POST /orders` as fast as the connections go, and a poller asks `GET /readyz` every 100 ms.
# Prints requests/s, p99, the share of orders answered 2xx, and the share of /readyz polls
# answered 200. Health checks that call a busy pool broken show as a /readyz share below 100%
# while every order succeeds.
set -euo pipefail
cd "$(dirname "$0")/.."

backend=${1:-sqlite}
duration=${2:-20}
shift $(($# > 2 ? 2 : $#)) || true
concurrencies=("$@")
((${#concurrencies[@]})) || concurrencies=(1 2 4 8 16 32 64)
port=18180 admin_port=18181

command -v wrk >/dev/null || { echo "wrk not found: apt-get install wrk" >&2; exit 2; }
# CHECKOUT_BIN measures another build (an older commit, say) with the same load.
checkout=${CHECKOUT_BIN:-target/release/checkout}
[ -n "${CHECKOUT_BIN:-}" ] || cargo build --quiet --release -p checkout --bin checkout

server_cpu=() client_cpu=()
if [ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null; then
  server_cpu=(taskset -c 0) client_cpu=(taskset -c 1)
fi

work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

database_args=(--data-dir "$work/sqlite")
if [ "$backend" = postgres ]; then
  database=probity_sweep
  psql -h 127.0.0.1 -U postgres -d test -qc "drop database if exists $database" >/dev/null
  psql -h 127.0.0.1 -U postgres -d test -qc "create database $database" >/dev/null
  database_args=(--database-url "postgres://postgres@127.0.0.1:5432/$database")
fi

"${server_cpu[@]}" "$checkout" --listen 127.0.0.1:$port --admin-listen 127.0.0.1:$admin_port \
  "${database_args[@]}" >"$work/checkout.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 200); do
  curl -fsS -o /dev/null "http://127.0.0.1:$port/readyz" 2>/dev/null && break
  sleep 0.1
done
curl -fsS -o /dev/null "http://127.0.0.1:$port/readyz" || { cat "$work/checkout.log" >&2; exit 1; }

cat >"$work/order.lua" <<'LUA'
wrk.method = "POST"
wrk.body = '{"customer":"sweep","items":[{"sku":"sku-1","quantity":2,"price_cents":450}]}'
wrk.headers["Content-Type"] = "application/json"
LUA

poll_readyz() { # seconds → "ok total"
  local until=$((SECONDS + $1)) ok=0 total=0 code
  while ((SECONDS < until)); do
    code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 1 "http://127.0.0.1:$port/readyz" || true)
    total=$((total + 1))
    [ "$code" = 200 ] && ok=$((ok + 1))
    sleep 0.1
  done
  echo "$ok $total"
}

printf '%-8s %-12s %10s %10s %12s %14s\n' backend connections req/s p99 "orders 2xx" "/readyz 200"
for connections in "${concurrencies[@]}"; do
  poll_readyz "$duration" >"$work/readyz" &
  poller=$!
  output=$("${client_cpu[@]}" wrk -t1 -c"$connections" -d"${duration}s" --latency -s "$work/order.lua" \
    "http://127.0.0.1:$port/orders")
  wait "$poller"
  read -r ok total <"$work/readyz"
  awk -v backend="$backend" -v connections="$connections" -v ok="$ok" -v total="$total" '
    /requests in/ { requests = $1 }
    /Non-2xx or 3xx responses:/ { failed = $5 }
    /^Requests\/sec:/ { rps = $2 }
    $1 == "99%" { p99 = $2 }
    END {
      good = requests > 0 ? 100 * (requests - failed) / requests : 0
      share = total > 0 ? 100 * ok / total : 0
      printf "%-8s %-12s %10.0f %10s %11.1f%% %8.1f%% (%d/%d)\n", backend, connections, rps, p99, good, share, ok, total
    }' <<<"$output"
done
