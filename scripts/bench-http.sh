#!/usr/bin/env bash
# HTTP benchmark (not a test): how much does an honest /readyz cost?
#
#   scripts/bench-http.sh [seconds per run, default 4]   (READYZ_ONLY=1: only part 1; AGENT_ONLY=1: only part 3)
#
# 1. checkout's /readyz (plain, ?verbose, application/json, application/health+json) and
#    probity's probes alone (on axum::serve, and on probity_axum::serve: the difference is what
#    probity's server costs), each against a bare axum handler returning a static 200:
#    the ratio of requests served (target: every format ≥ 0.95 × bare); and the bare handler
#    sending each format's body as a static file (what is left is probity's own work).
# 2. The database work health checks cause while /readyz is hammered, from PostgreSQL's own
#    statistics (pg_stat_activity on a database only this run uses): it must stay at one
#    query per check interval per instance, however many probes arrive (a probe never queries the database itself).
# 3. The probity agent's /readyz against the same bare handler, and its memory with 50 checks.
#
# How a ratio is measured: the target and the bare handler are served *at the same time*, both
# pinned to one core, each hammered by its own wrk (16 connections) on the other core. The
# kernel shares the core between the two servers, so each serves in proportion to what a
# request costs it, and whatever the machine does meanwhile (a shared VM's speed drifts by
# ±15% between runs a minute apart) hits both alike. Two bare handlers measured this way agree
# within 1–2%, against 10–15% for runs taken one after the other; the `bare-vs-bare` line is
# that control, in every run.
#
# The kernel does not split the core exactly in half, though: one process of a pair often gets
# 2–5% more CPU time than the other in a round, and its requests/s ratio moves with it. So each
# line also gives the CPU time per request of the two processes (user + system, from
# /proc/PID/stat, over the round), as `CPU/request N × bare`: bare's CPU time per request over
# the target's. It is the cost ratio the requests/s ratio stands for, without the share of the
# core each process got (two bare handlers: 0.98–1.00 per round, against 0.94–1.04 in requests/s).
set -euo pipefail
cd "$(dirname "$0")/.."

duration=${1:-4}
threads=1
connections=32
main_port=18080 admin_port=18081 bare_port=18099 probes_port=18098 bare2_port=18095 served_port=18097
pg_port=18090 pg_admin_port=18091
database=probity_bench

command -v wrk >/dev/null || { echo "wrk not found: apt-get install wrk" >&2; exit 2; }
cargo build --quiet --release -p checkout --bin checkout
cargo build --quiet --release -p probity-drill --example bare_axum --example probes_axum

# The servers share one core and wrk gets the other, so the clients do not steal from the
# servers they measure.
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

wait_http() { # url
  for _ in $(seq 1 200); do
    curl -fsS -o /dev/null "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "timed out waiting for $1" >&2
  exit 1
}

"${server_cpu[@]}" target/release/checkout --listen 127.0.0.1:$main_port --admin-listen 127.0.0.1:$admin_port \
  --data-dir "$work/sqlite" >"$work/checkout.log" 2>&1 &
pids+=($!)
wait_http "http://127.0.0.1:$main_port/readyz"
# The same bodies checkout answers, served statically by the bare handler: the part of a
# format's cost that is only its size on the wire.
mkdir "$work/static"
curl -fsS "http://127.0.0.1:$main_port/readyz?verbose" >"$work/static/verbose.txt"
curl -fsS -H "Accept: application/json" "http://127.0.0.1:$main_port/readyz" >"$work/static/readyz.json"
curl -fsS -H "Accept: application/health+json" "http://127.0.0.1:$main_port/readyz" >"$work/static/readyz.health.json"
"${server_cpu[@]}" target/release/examples/bare_axum 127.0.0.1:$bare_port "$work/static" >"$work/bare.log" 2>&1 &
pids+=($!)
"${server_cpu[@]}" target/release/examples/bare_axum 127.0.0.1:$bare2_port >"$work/bare2.log" 2>&1 &
pids+=($!)
"${server_cpu[@]}" target/release/examples/probes_axum 127.0.0.1:$probes_port >"$work/probes.log" 2>&1 &
pids+=($!)
"${server_cpu[@]}" target/release/examples/probes_axum 127.0.0.1:$served_port --probity-serve >"$work/served.log" 2>&1 &
pids+=($!)
wait_http "http://127.0.0.1:$bare_port/readyz"
wait_http "http://127.0.0.1:$bare2_port/readyz"
wait_http "http://127.0.0.1:$probes_port/readyz"
wait_http "http://127.0.0.1:$served_port/readyz"

wrk_rps() { # file → requests/s, after checking every answer was a 2xx
  local non2xx
  non2xx=$(awk '/Non-2xx or 3xx responses:/ {print $5}' "$1")
  if [ -n "$non2xx" ]; then
    echo "$1: $non2xx non-2xx answers" >&2
    exit 1
  fi
  awk '/^Requests\/sec:/ {print $2}' "$1"
}

pid_on() { # port → the pid of the process listening on it (empty when it cannot be told)
  { ss -ltnpH "sport = :$1" 2>/dev/null || true; } | grep -o 'pid=[0-9]*' | head -1 | cut -d= -f2
}
cpu_ticks() { # pid → user + system CPU time used so far, in clock ticks (0 when it is gone)
  awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0
}
# CPU time per request (µs) of a process that served `requests` while using `ticks`.
per_request() { awk -v t="$1" -v n="$2" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.4f", t / hz / n * 1e6 }'; }

run_pair() { # name url [header] → appends "bare-rps target-rps target-p99 bare-cpu target-cpu" to $work/$name
  local name=$1 url=$2 header=${3:-}
  local half=$((connections / 2))
  local with_header=()
  [ -n "$header" ] && with_header=(-H "$header")
  local port=${url#http://127.0.0.1:}
  port=${port%%/*}
  local bare_pid target_pid split=0
  bare_pid=$(pid_on "$bare_port") target_pid=$(pid_on "$port")
  # One process serving both (the bare handler's static bodies): its CPU time cannot be split.
  [ -n "$bare_pid" ] && [ -n "$target_pid" ] && [ "$bare_pid" != "$target_pid" ] && split=1
  local bare_before=0 target_before=0
  if ((split)); then
    bare_before=$(cpu_ticks "$bare_pid") target_before=$(cpu_ticks "$target_pid")
  fi
  "${client_cpu[@]}" wrk -t$threads -c$half -d"${duration}s" "http://127.0.0.1:$bare_port/readyz" >"$work/wrk-bare.txt" &
  local bare_wrk=$!
  "${client_cpu[@]}" wrk -t$threads -c$half -d"${duration}s" --latency "${with_header[@]}" "$url" >"$work/wrk-target.txt"
  wait $bare_wrk
  local p99 bare_n target_n bare_cpu=0 target_cpu=0
  p99=$(awk '$1 == "99%" {print $2}' "$work/wrk-target.txt")
  bare_n=$(awk '/ requests in / {print $1}' "$work/wrk-bare.txt")
  target_n=$(awk '/ requests in / {print $1}' "$work/wrk-target.txt")
  if ((split)); then
    bare_cpu=$(per_request $(($(cpu_ticks "$bare_pid") - bare_before)) "$bare_n")
    target_cpu=$(per_request $(($(cpu_ticks "$target_pid") - target_before)) "$target_n")
  fi
  echo "$(wrk_rps "$work/wrk-bare.txt") $(wrk_rps "$work/wrk-target.txt") $p99 $bare_cpu $target_cpu" >>"$work/$name"
}

median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
report() { # name [same-body name] → one line: target req/s, p99, ratios to bare (median of rounds)
  local name=$1 same=${2:-}
  local rps p99 ratio all cost=""
  rps=$(cut -d' ' -f2 "$work/$name" | median)
  p99=$(cut -d' ' -f3 "$work/$name" | sort -V | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
  ratio=$(awk '{ print $2 / $1 }' "$work/$name" | median)
  all=$(awk '{ printf "%.3f ", $2 / $1 }' "$work/$name")
  if awk '$5 == 0 { exit 1 }' "$work/$name"; then
    cost=$(awk '{ print $4 / $5 }' "$work/$name" | median)
    cost=$(printf '   CPU/request %.3f × bare (rounds: %s)' "$cost" "$(awk '{ printf "%.3f ", $4 / $5 }' "$work/$name")")
  fi
  local same_column=""
  if [ -n "$same" ]; then
    same_column=$(awk -v r="$ratio" -v s="$(awk '{ print $2 / $1 }' "$work/$same" | median)" \
      'BEGIN { printf "   %.2f × same body", r / s }')
  fi
  printf '%-22s %7.0f req/s   p99 %8s   %.3f × bare%s   (rounds: %s)%s\n' \
    "$name" "$rps" "$p99" "$ratio" "$same_column" "$all" "$cost"
}

rounds=${ROUNDS:-5}
if [ "${AGENT_ONLY:-0}" != 1 ]; then
echo "each target at the same time as bare axum, both on one core; wrk -t$threads -c$((connections / 2)) -d${duration}s each, $rounds interleaved rounds"
for _ in $(seq "$rounds"); do
  run_pair bare-vs-bare "http://127.0.0.1:$bare2_port/readyz"
  run_pair probes-only "http://127.0.0.1:$probes_port/readyz"
  run_pair probes-served "http://127.0.0.1:$served_port/readyz"
  run_pair readyz "http://127.0.0.1:$main_port/readyz"
  run_pair readyz-verbose "http://127.0.0.1:$main_port/readyz?verbose"
  run_pair readyz-json "http://127.0.0.1:$main_port/readyz" "Accept: application/json"
  run_pair readyz-health-json "http://127.0.0.1:$main_port/readyz" "Accept: application/health+json"
  run_pair bare-verbose-body "http://127.0.0.1:$bare_port/static/verbose.txt"
  run_pair bare-json-body "http://127.0.0.1:$bare_port/static/readyz.json" "Accept: application/json"
  run_pair bare-health-json-body "http://127.0.0.1:$bare_port/static/readyz.health.json" "Accept: application/health+json"
done
# The same-body column compares each format with the bare handler sending the same bytes to the
# same request (the JSON formats' `Accept` header included).
report bare-vs-bare
report probes-only
report probes-served
report readyz
report readyz-verbose bare-verbose-body
report readyz-json bare-json-body
report readyz-health-json bare-health-json-body
report bare-verbose-body
report bare-json-body
report bare-health-json-body
printf 'bodies: plain 3 B, verbose %s B, json %s B, health+json %s B\n' \
  "$(wc -c <"$work/static/verbose.txt")" "$(wc -c <"$work/static/readyz.json")" \
  "$(wc -c <"$work/static/readyz.health.json")"
echo "target: every /readyz format ≥ 0.95 × bare"
if [ "${READYZ_ONLY:-0}" = 1 ]; then
  exit 0
fi

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

# pg_stat_database's counters reach the view only when a backend flushes them (up to a minute
# later for a busy one), so count the health check's queries live instead: sample
# pg_stat_activity every 50 ms and count distinct (backend, query_start) of its `SELECT 1`.
measure() { # seconds → health-check queries per second (over the time the sampling took)
  local samples=$(($1 * 20))
  local started ended seen
  started=$(date +%s.%N)
  seen=$(for _ in $(seq "$samples"); do
    echo "select pid || ' ' || query_start from pg_stat_activity where datname = '$database' and query = 'SELECT 1';"
    echo "select pg_sleep(0.05);"
  done | psql -h 127.0.0.1 -U postgres -d postgres -qtA 2>/dev/null | grep -v '^$' | sort -u | wc -l)
  ended=$(date +%s.%N)
  awk -v n="$seen" -v a="$started" -v b="$ended" 'BEGIN { printf "%.2f", n / (b - a) }'
}

idle=$(measure "$duration")
"${client_cpu[@]}" wrk -t$threads -c$connections -d"$((duration * 2 + 2))s" "http://127.0.0.1:$pg_port/readyz" >"$work/wrk-pg.txt" &
wrk_pid=$!
sleep 0.5
loaded=$(measure "$((duration - 1))")
wait $wrk_pid
probes=$(awk '/^Requests\/sec:/ {print $2}' "$work/wrk-pg.txt")
echo
echo "health-check queries/s on the database, /readyz idle:        $idle"
echo "health-check queries/s on the database, /readyz at $probes req/s: $loaded"
awk -v i="$interval_ms" 'BEGIN { printf "expected from the db check alone:                %.2f (one per %d ms)\n", 1000 / i, i }'
psql -h 127.0.0.1 -U postgres -d postgres -qtAc "drop database if exists $database with (force)" >/dev/null || true

fi # AGENT_ONLY

# --- probity agent ------------------------------------------------------------------------------
# The agent's /readyz against the bare axum handler (same target as the library: ≥ 0.95 × bare),
# with the agent polling a static app on loopback; then the agent's resident memory with 50
# checks (25 TCP, 25 `app` HTTP polls of that app, one liveness condition), idle and under load.
agent_port=18097 agent50_port=18096
cargo build --quiet --release -p probity-cli --bin probity
agent_config() { # checks → TOML on stdout
  printf 'service = "bench"\n[app]\nurl = "http://127.0.0.1:%s"\n' "$bare_port"
  for i in $(seq 1 "$1"); do
    if ((i % 2)); then
      printf '[readiness.tcp-%s]\ntcp = { target = "127.0.0.1:%s" }\ninterval = "1s"\ntimeout = "500ms"\n' "$i" "$bare_port"
    else
      printf '[readiness.app-%s]\napp = { url = "/readyz" }\ninterval = "1s"\ntimeout = "500ms"\n' "$i"
    fi
  done
  printf '[liveness.app]\napp_liveness = { url = "/readyz" }\n'
}
agent_config 2 >"$work/agent.toml"
agent_config 50 >"$work/agent50.toml"
"${server_cpu[@]}" target/release/probity agent --config "$work/agent.toml" --listen 127.0.0.1:$agent_port >"$work/agent.log" 2>&1 &
pids+=($!)
wait_http "http://127.0.0.1:$agent_port/readyz"
for _ in $(seq "$rounds"); do
  run_pair agent-bare-vs-bare "http://127.0.0.1:$bare2_port/readyz"
  run_pair agent-readyz "http://127.0.0.1:$agent_port/readyz"
  run_pair agent-readyz-verbose "http://127.0.0.1:$agent_port/readyz?verbose"
done
echo
echo "probity agent (2 checks), each at the same time as bare axum on one core, $rounds interleaved rounds"
report agent-bare-vs-bare
report agent-readyz
report agent-readyz-verbose
echo "target: agent /readyz ≥ 0.95 × bare"

target/release/probity agent --config "$work/agent50.toml" --listen 127.0.0.1:$agent50_port >"$work/agent50.log" 2>&1 &
agent50_pid=$!
pids+=($agent50_pid)
wait_http "http://127.0.0.1:$agent50_port/readyz"
sleep 3 # a few polls of every check
rss() { awk '/^VmRSS:/ { printf "%.1f MiB", $2 / 1024 }' "/proc/$1/status"; }
idle_rss=$(rss $agent50_pid)
"${client_cpu[@]}" wrk -t$threads -c$connections -d"${duration}s" "http://127.0.0.1:$agent50_port/readyz" >/dev/null
loaded_rss=$(rss $agent50_pid)
hwm=$(awk '/^VmHWM:/ { printf "%.1f MiB", $2 / 1024 }' "/proc/$agent50_pid/status")
echo
echo "probity agent with 50 checks: RSS idle $idle_rss, after ${duration}s of wrk $loaded_rss (peak $hwm)"
