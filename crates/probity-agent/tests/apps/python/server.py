"""A small order service, written the way Python services are: a psycopg connection pool,
prometheus_client metrics (the pool's gauges among them), and the deep /healthz of the outage
story, which runs SELECT 1 on every call. probity-agent's tests run it against the real
PostgreSQL.

    PORT=3000 DATABASE_URL=postgresql://postgres@127.0.0.1:5432/test python server.py

With THREADS=N it serves from a fixed pool of N worker threads, as waitress or gunicorn's
gthread workers do: when every worker waits on the database (a lock, a black-holed
connection), nothing else is answered, not even /livez. POOL_TIMEOUT is how long a request
waits for a pooled connection (psycopg_pool's default is 30 s); ORDERS_TABLE names a table
/orders reads (a lock on it blocks the request). POST /chaos/deadlock wedges every worker on a
lock no thread releases.
"""

import json
import os
import signal
import threading
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, HTTPServer, ThreadingHTTPServer

from prometheus_client import CONTENT_TYPE_LATEST, Counter, Gauge, generate_latest
from psycopg_pool import ConnectionPool

pool = ConnectionPool(
    os.environ.get("DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/test"),
    min_size=1,
    max_size=int(os.environ.get("POOL_MAX", "4")),
    timeout=float(os.environ.get("POOL_TIMEOUT", "1.0")),
    # Connect in the background: the service answers /livez while the database is away.
    open=False,
)
pool.open(wait=False)

POOL_TIMEOUT = float(os.environ.get("POOL_TIMEOUT", "1.0"))
ORDERS_TABLE = os.environ.get("ORDERS_TABLE")
# Held by the main thread for ever: a worker that takes it after /chaos/deadlock never returns.
WEDGE = threading.Lock()
WEDGE.acquire()
WEDGED = threading.Event()

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

    def do_POST(self):
        if self.path == "/chaos/deadlock":
            self.send(200, {"wedged": True})
            WEDGED.set()
            return
        return self.send(404, {"error": "not found"})

    def do_GET(self):
        if WEDGED.is_set():
            with WEDGE:  # never acquired: the worker waits on a lock for ever
                pass
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
                with pool.connection(timeout=POOL_TIMEOUT) as conn:
                    if ORDERS_TABLE:
                        conn.execute(f"SELECT count(*) FROM {ORDERS_TABLE}")
                    else:
                        conn.execute("SELECT now()")
                REQUESTS.labels("200").inc()
                return self.send(200, {"orders": []})
            except Exception as error:
                REQUESTS.labels("503").inc()
                return self.send(503, {"error": str(error)})
        return self.send(404, {"error": "not found"})

    def log_message(self, format, *args):
        pass


class PooledHTTPServer(HTTPServer):
    """Requests served by a fixed pool of worker threads; the rest queue."""

    def __init__(self, address, handler, threads):
        super().__init__(address, handler)
        self.workers = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="worker")

    def process_request(self, request, client_address):
        self.workers.submit(self.work, request, client_address)

    def work(self, request, client_address):
        try:
            self.finish_request(request, client_address)
        except Exception:
            self.handle_error(request, client_address)
        finally:
            self.shutdown_request(request)


def main():
    address = ("127.0.0.1", int(os.environ.get("PORT", "3000")))
    threads = int(os.environ.get("THREADS", "0"))
    if threads > 0:
        server = PooledHTTPServer(address, Handler, threads)
    else:
        server = ThreadingHTTPServer(address, Handler)
        server.daemon_threads = True

    def stop(*_):
        threading.Thread(target=server.shutdown).start()

    signal.signal(signal.SIGTERM, stop)
    print(f"listening on 127.0.0.1:{server.server_address[1]}", flush=True)
    server.serve_forever()
    pool.close()


if __name__ == "__main__":
    main()
