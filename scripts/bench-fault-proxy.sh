#!/usr/bin/env bash
# Fault-proxy benchmark (not a test): is the drill's per-instance TCP fault proxy the
# bottleneck? What does it add to a request?
#
#   scripts/bench-fault-proxy.sh [seconds per run, default 5] [rounds, default 5]
#
# One HTTP server (the bare axum handler of scripts/bench-http.sh) serves two wrk clients at
# the same time, 32 connections each: one through an open fault proxy (the drill's own
# `TcpFaultProxy`, on a runtime like the drill's), one directly. The server and the proxy share
# one core and both wrk the other, so the proxy's work competes with the server's as it does
# in a drill, the clients steal from neither, and whatever the machine does meanwhile hits
# both paths alike. The control round runs two direct clients the same way: their ratio is the
# instrument's own noise. Each round runs the control, then the measurement; the report gives
# the median of the rounds with the smallest and largest beside it.
#
#   proxied/direct      requests served through the proxy ÷ served directly, at once
#   added p50, p99      wrk's latency percentile through the proxy minus directly (ms)
set -euo pipefail
cd "$(dirname "$0")/.."

duration=${1:-5}
rounds=${2:-5}
connections=32
server_port=18180

command -v wrk >/dev/null || { echo "wrk not found: apt-get install wrk" >&2; exit 2; }
cargo build --quiet --release -p probity-drill --example bare_axum --example fault_proxy

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

"${server_cpu[@]}" target/release/examples/bare_axum 127.0.0.1:$server_port >"$work/server.log" 2>&1 &
pids+=($!)
"${server_cpu[@]}" target/release/examples/fault_proxy 127.0.0.1:$server_port >"$work/proxy.address" 2>"$work/proxy.log" &
pids+=($!)
direct="http://127.0.0.1:$server_port/readyz"
wait_http "$direct"
for _ in $(seq 1 100); do [ -s "$work/proxy.address" ] && break; sleep 0.1; done
proxied="http://$(head -n1 "$work/proxy.address")/readyz"
wait_http "$proxied"

# wrk's report → "requests/s p50_ms p99_ms", after checking every answer was a 2xx and no
# socket error happened.
summary() { # file
  if grep -qE 'Non-2xx or 3xx responses|Socket errors' "$1"; then
    echo "$1: errors:" >&2
    cat "$1" >&2
    exit 1
  fi
  awk '
    function ms(v) {
      if (v ~ /us$/) return substr(v, 1, length(v) - 2) / 1000
      if (v ~ /ms$/) return substr(v, 1, length(v) - 2) + 0
      if (v ~ /s$/) return substr(v, 1, length(v) - 1) * 1000
      return v + 0
    }
    $1 == "50%" { p50 = ms($2) }
    $1 == "99%" { p99 = ms($2) }
    /^Requests\/sec:/ { rps = $2 }
    END { printf "%s %.3f %.3f\n", rps, p50, p99 }' "$1"
}

pair() { # url-a url-b → "a b" summaries on one line
  "${client_cpu[@]}" wrk -t1 -c$connections -d"${duration}s" --latency "$2" >"$work/b.txt" &
  local other=$!
  "${client_cpu[@]}" wrk -t1 -c$connections -d"${duration}s" --latency "$1" >"$work/a.txt"
  wait $other
  echo "$(summary "$work/a.txt") $(summary "$work/b.txt")"
}

# Warm both paths.
pair "$proxied" "$direct" >/dev/null

printf '%-6s %-28s %-44s\n' round "control: direct/direct" "proxied vs direct: req/s, p50, p99 (ms)"
for round in $(seq 1 "$rounds"); do
  read -r c_rps _ _ d_rps _ _ <<<"$(pair "$direct" "$direct")"
  read -r p_rps p_p50 p_p99 q_rps q_p50 q_p99 <<<"$(pair "$proxied" "$direct")"
  control=$(awk -v a="$c_rps" -v b="$d_rps" 'BEGIN { printf "%.3f", a / b }')
  ratio=$(awk -v a="$p_rps" -v b="$q_rps" 'BEGIN { printf "%.3f", a / b }')
  added50=$(awk -v a="$p_p50" -v b="$q_p50" 'BEGIN { printf "%.3f", a - b }')
  added99=$(awk -v a="$p_p99" -v b="$q_p99" 'BEGIN { printf "%.3f", a - b }')
  echo "$control $ratio $added50 $added99" >>"$work/rounds"
  printf '%-6s %-28s %.0f vs %.0f req/s (%s×), p50 %.2f vs %.2f, p99 %.2f vs %.2f\n' \
    "$round" "$control×" "$p_rps" "$q_rps" "$ratio" "$p_p50" "$q_p50" "$p_p99" "$q_p99"
done

stat() { # column → "median (min–max)"
  cut -d' ' -f"$1" "$work/rounds" | sort -g | awk '
    { v[NR] = $1 }
    END { printf "%.3f (%.3f to %.3f)", v[int((NR + 1) / 2)], v[1], v[NR] }'
}
echo
echo "over $rounds rounds of ${duration} s, $connections connections per client, median (min to max):"
echo "  control, direct/direct:   $(stat 1) ×"
echo "  proxied/direct req/s:     $(stat 2) ×"
echo "  added p50:                $(stat 3) ms"
echo "  added p99:                $(stat 4) ms"
