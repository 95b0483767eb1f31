CREATE TABLE IF NOT EXISTS orders (
    id BIGSERIAL PRIMARY KEY,
    customer TEXT NOT NULL,
    total_cents BIGINT NOT NULL,
    created_at TEXT NOT NULL
        DEFAULT to_char(now() AT TIME ZONE 'utc', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
);

CREATE TABLE IF NOT EXISTS order_items (
    order_id BIGINT NOT NULL REFERENCES orders (id),
    line BIGINT NOT NULL,
    sku TEXT NOT NULL,
    quantity BIGINT NOT NULL,
    price_cents BIGINT NOT NULL,
    PRIMARY KEY (order_id, line)
);

CREATE INDEX IF NOT EXISTS order_items_sku ON order_items (sku);
