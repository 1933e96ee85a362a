-- 0003 for PostgreSQL: the same schema as sql/0003_webhooks.sql (low-balance thresholds, webhook
-- endpoints, the event outbox and its deliveries). Frozen once merged: changes go in a new file.
-- Amounts in micro-credits (_micros), times in Unix epoch milliseconds (_ms), as in 0001.

-- Null: no threshold. balance.low fires when a write takes available from at least this value
-- to below it.
ALTER TABLE accounts ADD COLUMN low_balance_threshold_micros BIGINT
  CHECK (low_balance_threshold_micros IS NULL OR low_balance_threshold_micros >= 0);

-- A project's endpoints. `secret` signs the deliveries (it must be readable to sign); it is
-- returned once, at creation, and never logged. A deleted endpoint keeps its row (deleted_at_ms)
-- so that its past deliveries still name it, but leaves the list and receives nothing more.
CREATE TABLE webhooks (
  id TEXT COLLATE "C" PRIMARY KEY,
  project_id TEXT COLLATE "C" NOT NULL REFERENCES projects (id),
  url TEXT COLLATE "C" NOT NULL,
  -- JSON array of the subscribed event types.
  events TEXT COLLATE "C" NOT NULL,
  description TEXT COLLATE "C" NOT NULL,
  secret TEXT COLLATE "C" NOT NULL,
  created_at_ms BIGINT NOT NULL,
  deleted_at_ms BIGINT
);
CREATE INDEX webhooks_project ON webhooks (project_id, created_at_ms, id);

-- The outbox: one row per event, inserted in the transaction of the change that caused it.
-- `payload` is the exact JSON text sent ({id, type, createdAt, data}).
CREATE TABLE webhook_events (
  id TEXT COLLATE "C" PRIMARY KEY,
  project_id TEXT COLLATE "C" NOT NULL REFERENCES projects (id),
  type TEXT COLLATE "C" NOT NULL,
  payload TEXT COLLATE "C" NOT NULL,
  created_at_ms BIGINT NOT NULL
);

-- One row per (event, subscribed endpoint), inserted with the event. A worker claims due rows
-- (FOR UPDATE SKIP LOCKED) by setting locked_until_ms, a lease longer than one attempt, so one
-- delivery is attempted by at most one process at a time; a process that dies mid-attempt
-- leaves the row pending, and it is claimed again once the lease has run out.
CREATE TABLE webhook_deliveries (
  id TEXT COLLATE "C" PRIMARY KEY,
  project_id TEXT COLLATE "C" NOT NULL REFERENCES projects (id),
  webhook_id TEXT COLLATE "C" NOT NULL REFERENCES webhooks (id),
  event_id TEXT COLLATE "C" NOT NULL REFERENCES webhook_events (id),
  event_type TEXT COLLATE "C" NOT NULL,
  status TEXT COLLATE "C" NOT NULL CHECK (status IN ('pending', 'delivered', 'failed')),
  attempts INTEGER NOT NULL DEFAULT 0,
  last_status_code INTEGER,
  last_error TEXT COLLATE "C",
  next_attempt_at_ms BIGINT,
  locked_until_ms BIGINT,
  lease_token TEXT COLLATE "C",
  created_at_ms BIGINT NOT NULL,
  delivered_at_ms BIGINT,
  CONSTRAINT webhook_deliveries_event_webhook_key UNIQUE (event_id, webhook_id)
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (status, next_attempt_at_ms);
CREATE INDEX webhook_deliveries_list ON webhook_deliveries (webhook_id, created_at_ms, id);
