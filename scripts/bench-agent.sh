#!/usr/bin/env bash
# The agent's cost on a large exposition and on a large configuration, measured on the binary:
#
#   1. an app exposing 500,000 series (7.5 MiB, under the agent's 8 MiB cap on what it reads,
#      so every series is parsed) on /metrics, read by a metrics check, the event-loop
#      condition and the request outcomes every second for 30 s: the agent's peak RSS (VmHWM),
#      whether /livez ever failed, and /readyz?verbose (the check passing shows it was read);
#   2. a configuration of 1,000 entries (500 checks, 500 conditions): the time the agent's
#      /metrics page takes, and the RSS it adds.
#
#   scripts/bench-agent.sh [path/to/probity]    (default: target/release/probity)
set -euo pipefail
probity=${1:-target/release/probity}
[ -x "$probity" ] || { echo "build it first: cargo build --release -p probity-cli" >&2; exit 2; }
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT

python3 - "$work/metrics" <<'PY'
import sys
with open(sys.argv[1], "w") as out:
    out.write("# TYPE nodejs_eventloop_lag_seconds gauge\nnodejs_eventloop_lag_seconds 0.002\n")
    out.write("# TYPE pg_pool_waiting_count gauge\npg_pool_waiting_count 0\n")
    out.write("# TYPE http_requests_total counter\n")
    for i in range(500_000):
        out.write(f'a{i % 1000}{{s="{i // 1000}"}} 1\n')
    out.write('http_requests_total{status="200"} 5\n')
PY
size=$(stat -c %s "$work/metrics")
# The agent reads at most 8 MiB of an exposition (crates/probity-agent/src/fetch.rs): a larger
# one is refused before it is parsed, and would measure nothing.
[ "$size" -le $((8 << 20)) ] || { echo "exposition of $size B is over the agent's 8 MiB cap" >&2; exit 2; }
app_port=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
(cd "$work" && exec python3 -m http.server "$app_port" --bind 127.0.0.1 >/dev/null 2>&1) &
for _ in $(seq 100); do curl -sf -o /dev/null "http://127.0.0.1:$app_port/metrics" && break; sleep 0.1; done

cat > "$work/large.toml" <<TOML
[app]
url = "http://127.0.0.1:$app_port"
[readiness.db-pool]
metrics = { url = "/metrics", preset = "node_postgres" }
interval = "1s"
timeout = "900ms"
[liveness.event-loop]
event_loop_lag = { url = "/metrics", max = "5s" }
interval = "1s"
timeout = "900ms"
max_silence = "10s"
TOML
"$probity" agent --config "$work/large.toml" --listen 127.0.0.1:0 >"$work/large.out" 2>/dev/null &
agent=$!
for _ in $(seq 100); do grep -q listening "$work/large.out" 2>/dev/null && break; sleep 0.1; done
agent_url="http://$(sed -n 's/listening on //p' "$work/large.out")"
failures=0; samples=0
for _ in $(seq 60); do
  samples=$((samples + 1))
  code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$agent_url/livez" || true)
  [ "$code" = 200 ] || failures=$((failures + 1))
  sleep 0.5
done
hwm=$(awk '/VmHWM/ {print $2}' /proc/$agent/status)
echo "exposition: $((size / 1024)) KiB, 500,000 series; agent peak RSS $((hwm / 1024)) MiB; /livez failed $failures of $samples samples"
echo "readiness: $(curl -s --max-time 2 "$agent_url/readyz?verbose" | tr '\n' ' ')"
kill $agent

python3 - "$work/wide.toml" "$app_port" <<'PY'
import sys
with open(sys.argv[1], "w") as out:
    out.write(f'[app]\nurl = "http://127.0.0.1:{sys.argv[2]}"\n[requests]\nenabled = false\n')
    for i in range(500):
        out.write(f'[readiness.tcp-{i}]\ntcp = {{ target = "127.0.0.1:{sys.argv[2]}" }}\ninterval = "5s"\n')
    for i in range(500):
        out.write(f'[liveness.file-{i}]\nheartbeat_file = {{ path = "/tmp/probity-bench-none-{i}", max_age = "60s" }}\n')
PY
"$probity" agent --config "$work/wide.toml" --listen 127.0.0.1:0 >"$work/wide.out" 2>/dev/null &
agent=$!
for _ in $(seq 100); do grep -q listening "$work/wide.out" 2>/dev/null && break; sleep 0.1; done
agent_url="http://$(sed -n 's/listening on //p' "$work/wide.out")"
sleep 6
before=$(awk '/VmRSS/ {print $2}' /proc/$agent/status)
times=()
for _ in $(seq 20); do
  times+=("$(curl -s -o /dev/null -w '%{time_total}' "$agent_url/metrics")")
done
after=$(awk '/VmRSS/ {print $2}' /proc/$agent/status)
median=$(printf '%s\n' "${times[@]}" | sort -n | sed -n 10p)
worst=$(printf '%s\n' "${times[@]}" | sort -n | tail -1)
echo "1,000 entries: /metrics median ${median}s, worst ${worst}s over 20; RSS ${before} KiB before, ${after} KiB after"
kill $agent
