-- 0003: low-balance thresholds, webhook endpoints, the event outbox and its deliveries
-- (docs/api.md#low-balance-alerts-and-webhooks). Frozen once merged: changes go in a new file.
-- Amounts in micro-credits (_micros), times in Unix epoch milliseconds (_ms), as in 0001.

-- Null: no threshold. balance.low fires when a write takes available from at least this value
-- to below it.
ALTER TABLE accounts ADD COLUMN low_balance_threshold_micros INTEGER
  CHECK (low_balance_threshold_micros IS NULL OR low_balance_threshold_micros >= 0);

-- A project's endpoints. `secret` signs the deliveries (it must be readable to sign); it is
-- returned once, at creation, and never logged. A deleted endpoint keeps its row (deleted_at_ms)
-- so that its past deliveries still name it, but leaves the list and receives nothing more.
CREATE TABLE webhooks (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL REFERENCES projects (id),
  url TEXT NOT NULL,
  -- JSON array of the subscribed event types.
  events TEXT NOT NULL,
  description TEXT NOT NULL,
  secret TEXT NOT NULL,
  created_at_ms INTEGER NOT NULL,
  deleted_at_ms INTEGER
);
CREATE INDEX webhooks_project ON webhooks (project_id, created_at_ms, id);

-- The outbox: one row per event, inserted in the transaction of the change that caused it.
-- `payload` is the exact JSON text sent ({id, type, createdAt, data}).
CREATE TABLE webhook_events (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL REFERENCES projects (id),
  type TEXT NOT NULL,
  payload TEXT NOT NULL,
  created_at_ms INTEGER NOT NULL
);

-- One row per (event, subscribed endpoint), inserted with the event. A worker claims due rows
-- by setting locked_until_ms (a lease longer than one attempt); a process that dies mid-attempt
-- leaves the row pending, and it is claimed again once the lease has run out.
CREATE TABLE webhook_deliveries (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL REFERENCES projects (id),
  webhook_id TEXT NOT NULL REFERENCES webhooks (id),
  event_id TEXT NOT NULL REFERENCES webhook_events (id),
  event_type TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('pending', 'delivered', 'failed')),
  attempts INTEGER NOT NULL DEFAULT 0,
  last_status_code INTEGER,
  last_error TEXT,
  next_attempt_at_ms INTEGER,
  locked_until_ms INTEGER,
  lease_token TEXT,
  created_at_ms INTEGER NOT NULL,
  delivered_at_ms INTEGER,
  UNIQUE (event_id, webhook_id)
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (status, next_attempt_at_ms);
CREATE INDEX webhook_deliveries_list ON webhook_deliveries (webhook_id, created_at_ms, id);
