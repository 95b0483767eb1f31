"""A small order service, written the way Python services are: a psycopg connection pool,
prometheus_client metrics (the pool's gauges among them), and the deep /healthz of the outage
story, which runs SELECT 1 on every call. probity-agent's tests run it against the real
PostgreSQL.

    PORT=3000 DATABASE_URL=postgresql://postgres@127.0.0.1:5432/test python server.py
"""

import json
import os
import signal
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import CONTENT_TYPE_LATEST, Counter, Gauge, generate_latest
from psycopg_pool import ConnectionPool

pool = ConnectionPool(
    os.environ.get("DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/test"),
    min_size=1,
    max_size=int(os.environ.get("POOL_MAX", "4")),
    timeout=1.0,
    # Connect in the background: the service answers /livez while the database is away.
    open=False,
)
pool.open(wait=False)

HEALTH_CALLS = Counter("health_checks", "Calls of the deep /healthz endpoint.")
REQUESTS = Counter("http_requests", "API requests by status.", ["status"])


def pool_gauge(name, documentation, key):
    gauge = Gauge(name, documentation)
    gauge.set_function(lambda: pool.get_stats().get(key, 0))


pool_gauge("psycopg_pool_size", "Connections in the pool.", "pool_size")
pool_gauge("psycopg_pool_available", "Idle connections in the pool.", "pool_available")
pool_gauge("psycopg_pool_requests_waiting", "Requests waiting for a connection.", "requests_waiting")


class Handler(BaseHTTPRequestHandler):
    def send(self, status, body, content_type="application/json"):
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        try:
            self.send_response(status)
            self.send_header("content-type", content_type)
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the caller gave up (a probe's timeout): nothing to answer

    def do_GET(self):
        if self.path == "/livez":
            return self.send(200, {"status": "ok"})
        if self.path == "/healthz":
            HEALTH_CALLS.inc()
            try:
                with pool.connection(timeout=1.0) as conn:
                    conn.execute("SELECT 1")
                return self.send(200, {"status": "ok"})
            except Exception as error:  # the point of a deep check: any failure is a 503
                return self.send(503, {"status": "unhealthy", "error": str(error)})
        if self.path == "/metrics":
            return self.send(200, generate_latest(), CONTENT_TYPE_LATEST)
        if self.path == "/orders":
            try:
                with pool.connection(timeout=1.0) as conn:
                    conn.execute("SELECT now()")
                REQUESTS.labels("200").inc()
                return self.send(200, {"orders": []})
            except Exception as error:
                REQUESTS.labels("503").inc()
                return self.send(503, {"error": str(error)})
        return self.send(404, {"error": "not found"})

    def log_message(self, format, *args):
        pass


def main():
    server = ThreadingHTTPServer(("127.0.0.1", int(os.environ.get("PORT", "3000"))), Handler)
    server.daemon_threads = True

    def stop(*_):
        threading.Thread(target=server.shutdown).start()

    signal.signal(signal.SIGTERM, stop)
    print(f"listening on 127.0.0.1:{server.server_address[1]}", flush=True)
    server.serve_forever()
    pool.close()


if __name__ == "__main__":
    main()
