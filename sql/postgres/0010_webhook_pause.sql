-- 0010 for PostgreSQL: the same schema as sql/0010_webhook_pause.sql (pausing a webhook
-- endpoint). Frozen once merged: changes go in a new file. Times in Unix epoch milliseconds (_ms).

-- Since when the endpoint is paused (`isActive: false`); null while active. A paused endpoint
-- still gets a pending delivery of each event it subscribes to, but none is claimed until it is
-- active again.
ALTER TABLE webhooks ADD COLUMN paused_at_ms BIGINT;
