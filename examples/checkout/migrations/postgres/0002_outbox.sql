-- The transactional outbox: one row per order, written in the order's own transaction, so an
-- order is never stored without its event nor its event published without the order. The relay
-- (--amqp-url) publishes rows in id order and sets published_at once the broker confirms.
CREATE TABLE IF NOT EXISTS outbox (
    id BIGSERIAL PRIMARY KEY,
    order_id BIGINT NOT NULL UNIQUE REFERENCES orders (id),
    payload TEXT NOT NULL,
    created_at TEXT NOT NULL
        DEFAULT to_char(now() AT TIME ZONE 'utc', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
    published_at TEXT
);

CREATE INDEX IF NOT EXISTS outbox_unpublished ON outbox (id) WHERE published_at IS NULL;
