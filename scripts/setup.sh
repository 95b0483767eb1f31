#!/usr/bin/env bash
# Prepares a machine for the test suite: system packages, Python tools, and the local services
# the tests talk to (PostgreSQL, MariaDB, Redis, RabbitMQ, Mosquitto, NATS, memcached, etcd).
#
# Idempotent: installs only what is missing and starts only what is down. With CI=true a
# service that cannot be started fails the run here, before any test is built.
set -euo pipefail

log() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }

# --- system packages -------------------------------------------------------------------------
packages=(
  haproxy            # probity drill: the load balancer in front of the fleet
  prometheus         # promtool: unit tests of the alert rules
  chromium           # probity simulate: the HTML chart rendered headless; checkout's status page test
  chromium-driver    # ... which drives the page over WebDriver
  fonts-dejavu-core  # ... with a font to render
  wrk                # scripts/bench-http.sh
  protobuf-compiler  # grpc.health.v1 code generation
  memcached          # probity-checks' memcached check
  etcd-server        # probity-checks' etcd check
)
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$package")
done
if ((${#missing[@]})); then
  log "installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# --- Python tools (manifest validation, a gRPC health client nobody here wrote) -------------
VENV="${PROBITY_VENV:-$PWD/target/venv}"
if [ ! -x "$VENV/bin/python" ]; then
  log "creating Python venv at $VENV"
  python3 -m venv "$VENV"
fi
need_pip=()
"$VENV/bin/python" -c 'import kubernetes_validate' 2>/dev/null || need_pip+=(kubernetes-validate)
"$VENV/bin/python" -c 'import grpc_health.v1' 2>/dev/null || need_pip+=(grpcio grpcio-health-checking)
# probity agent's Python test service (crates/probity-agent/tests/apps/python).
"$VENV/bin/python" -c 'import prometheus_client, psycopg, psycopg_pool' 2>/dev/null ||
  need_pip+=(-r crates/probity-agent/tests/apps/python/requirements.txt)
if ((${#need_pip[@]})); then
  log "installing Python packages: ${need_pip[*]}"
  "$VENV/bin/pip" install -q "${need_pip[@]}"
fi
export PATH="$VENV/bin:$PATH"

# --- npm packages of probity agent's Node test service (node_modules beside it, gitignored) --
NODE_APP=crates/probity-agent/tests/apps/node
if command -v npm >/dev/null; then
  if [ ! -d "$NODE_APP/node_modules/pg" ] || [ ! -d "$NODE_APP/node_modules/prom-client" ]; then
    log "installing the Node test service's npm packages"
    (cd "$NODE_APP" && npm ci --no-audit --no-fund --silent)
  fi
elif [ "${CI:-}" = "true" ]; then
  log "npm not found: probity agent's Node tests need Node 18+ and npm"
  exit 1
fi

# --- services --------------------------------------------------------------------------------
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

start_service() {
  local name=$1 port=$2
  shift 2
  if port_open "$port"; then
    return 0
  fi
  log "starting $name (port $port is closed)"
  "$@" >/dev/null 2>&1 || true
}

start_service postgresql 5432 bash -c 'pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start'
start_service mariadb 3306 start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd
start_service redis 6379 redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no --dir /var/lib/redis --logfile /var/log/redis/ci.log
start_service rabbitmq 5672 rabbitmq-server -detached
start_service mosquitto 1883 mosquitto -d -c /etc/mosquitto/mosquitto.conf
# Debian's packages start neither without systemd: both run here, on loopback (memcached refuses
# to run as root without a user to switch to).
start_service memcached 11211 memcached -d -u memcache -l 127.0.0.1 -p 11211 -U 0
start_service etcd 2379 bash -c 'mkdir -p /var/lib/etcd-probity && nohup etcd --name probity \
  --data-dir /var/lib/etcd-probity --listen-client-urls http://127.0.0.1:2379 \
  --advertise-client-urls http://127.0.0.1:2379 --listen-peer-urls http://127.0.0.1:2380 \
  --initial-advertise-peer-urls http://127.0.0.1:2380 \
  --initial-cluster probity=http://127.0.0.1:2380 >/var/log/etcd-probity.log 2>&1 </dev/null &'
start_service nats 4222 start-stop-daemon --start --oknodo --background --exec /usr/sbin/nats-server -- -a 127.0.0.1 -p 4222 -js -sd /var/lib/nats-server -l /var/log/nats-server.log

failed=()
for entry in postgresql:5432 mariadb:3306 redis:6379 rabbitmq:5672 mosquitto:1883 nats:4222 \
  memcached:11211 etcd:2379; do
  name=${entry%%:*} port=${entry##*:}
  deadline=$((SECONDS + 90))
  until port_open "$port"; do
    if ((SECONDS > deadline)); then
      failed+=("$name (127.0.0.1:$port)")
      break
    fi
    sleep 1
  done
done
if ((${#failed[@]})); then
  if [ "${CI:-}" = "true" ]; then
    log "services unreachable: ${failed[*]}"
    exit 1
  fi
  log "warning: services unreachable (tests that need them will skip outside CI): ${failed[*]}"
fi

# The database the tests use.
psql -h 127.0.0.1 -U postgres -d test -c 'select 1' >/dev/null 2>&1 ||
  psql -h 127.0.0.1 -U postgres -c 'create database test' >/dev/null 2>&1 || true

# --- open-source services the third-party tests run (scripts/subjects.sh) --------------------
# shellcheck source=scripts/subjects.sh
source scripts/subjects.sh
