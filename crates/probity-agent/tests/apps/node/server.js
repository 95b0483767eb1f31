// A small order service, written the way Node services are: a pg pool, prom-client's default
// metrics (event-loop lag included) plus the pool's gauges, and the deep /health of the
// outage story (SELECT 1 on every call). probity-agent's tests run it against the real
// PostgreSQL and drive its faults through /chaos/*.
//
//   PORT=3000 DATABASE_URL=postgres://postgres@127.0.0.1:5432/test node server.js
//
// GET /ready is the service's own readiness, written the way many are: it asks the pool for a
// client within READY_BUDGET_MS (200 ms) and calls the service broken when none comes — under
// load, a busy pool looks broken to it while every request is served. POOL_ACQUIRE_MS is how
// long a request waits for a client (1000 ms), QUERY_MS how long each /orders query takes
// (pg_sleep; 0 by default). HEALTH=shallow makes /health check nothing, as some services do.
"use strict";

const http = require("node:http");
const { Pool } = require("pg");
const client = require("prom-client");

const port = Number(process.env.PORT || 3000);
const pool = new Pool({
  connectionString: process.env.DATABASE_URL || "postgres://postgres@127.0.0.1:5432/test",
  max: Number(process.env.POOL_MAX || 4),
  connectionTimeoutMillis: Number(process.env.POOL_ACQUIRE_MS || 1000),
  idleTimeoutMillis: 10000,
});
// An idle client losing its connection (the database went away) must not crash the process.
pool.on("error", (err) => console.error("idle client error:", err.message));

client.collectDefaultMetrics({ eventLoopMonitoringPrecision: 10 });
const gauge = (name, help, read) =>
  new client.Gauge({ name, help, collect() { this.set(read()); } });
gauge("pg_pool_total_count", "Clients in the pool.", () => pool.totalCount);
gauge("pg_pool_idle_count", "Idle clients in the pool.", () => pool.idleCount);
gauge("pg_pool_waiting_count", "Queries waiting for a client.", () => pool.waitingCount);
gauge("pg_pool_max", "Most clients the pool opens.", () => pool.options.max);
const healthCalls = new client.Counter({
  name: "health_checks_total",
  help: "Calls of the deep /health endpoint.",
});
const requests = new client.Counter({
  name: "http_requests_total",
  help: "API requests by status.",
  labelNames: ["status"],
});

const readyBudget = Number(process.env.READY_BUDGET_MS || 200);
const queryMs = Number(process.env.QUERY_MS || 0);
const shallowHealth = process.env.HEALTH === "shallow";

// A client within `ms`, or an error; a client that comes later is given back at once.
function clientWithin(ms) {
  return new Promise((resolve, reject) => {
    let late = false;
    const timer = setTimeout(() => {
      late = true;
      reject(new Error(`no connection within ${ms}ms`));
    }, ms);
    pool.connect().then(
      (client) => {
        if (late) return client.release();
        clearTimeout(timer);
        resolve(client);
      },
      (err) => {
        clearTimeout(timer);
        if (!late) reject(err);
      },
    );
  });
}

// Clients checked out by /chaos/leak and never returned: the pool leak.
const leaked = [];

function send(res, status, body, type = "application/json") {
  const text = typeof body === "string" ? body : JSON.stringify(body);
  res.writeHead(status, { "content-type": type, "content-length": Buffer.byteLength(text) });
  res.end(text);
}

async function route(req, res) {
  const url = new URL(req.url, "http://localhost");
  if (req.method === "GET" && url.pathname === "/livez") {
    return send(res, 200, { status: "ok" });
  }
  if (req.method === "GET" && url.pathname === "/health") {
    healthCalls.inc();
    if (shallowHealth) return send(res, 200, { status: "ok" });
    try {
      await pool.query("SELECT 1");
      return send(res, 200, { status: "ok" });
    } catch (err) {
      return send(res, 503, { status: "unhealthy", error: err.message });
    }
  }
  if (req.method === "GET" && url.pathname === "/ready") {
    let client;
    try {
      client = await clientWithin(readyBudget);
      await client.query("SELECT 1");
      return send(res, 200, { status: "ready" });
    } catch (err) {
      return send(res, 503, { status: "not ready", error: err.message });
    } finally {
      if (client) client.release();
    }
  }
  if (req.method === "GET" && url.pathname === "/metrics") {
    return send(res, 200, await client.register.metrics(), client.register.contentType);
  }
  if (req.method === "GET" && url.pathname === "/orders") {
    try {
      const result = queryMs > 0
        ? await pool.query("SELECT pg_sleep($1::float8 / 1000), now() AS at", [queryMs])
        : await pool.query("SELECT now() AS at");
      requests.inc({ status: "200" });
      return send(res, 200, { orders: [], at: result.rows[0].at });
    } catch (err) {
      requests.inc({ status: "503" });
      return send(res, 503, { error: err.message });
    }
  }
  if (req.method === "POST" && url.pathname === "/chaos/leak") {
    const count = Number(url.searchParams.get("count") || pool.options.max);
    for (let i = 0; i < count; i++) leaked.push(await pool.connect());
    return send(res, 200, { leaked: leaked.length });
  }
  if (req.method === "POST" && url.pathname === "/chaos/release") {
    while (leaked.length) leaked.pop().release();
    return send(res, 200, { leaked: 0 });
  }
  if (req.method === "POST" && url.pathname === "/chaos/block") {
    // Answer first, then block the event loop: nothing else runs until it ends.
    const ms = Math.min(Number(url.searchParams.get("ms") || 6000), 60000);
    send(res, 200, { blocking_ms: ms });
    setImmediate(() => {
      const until = Date.now() + ms;
      while (Date.now() < until) { /* a stuck loop */ }
    });
    return;
  }
  return send(res, 404, { error: "not found" });
}

const server = http.createServer((req, res) => {
  route(req, res).catch((err) => send(res, 500, { error: err.message }));
});
server.listen(port, "127.0.0.1", () => console.log(`listening on 127.0.0.1:${server.address().port}`));
process.on("SIGTERM", () => server.close(() => pool.end().then(() => process.exit(0))));
