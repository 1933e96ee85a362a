-- 0007: fair webhook delivery and the retention of webhook data (docs/design.md#webhook-delivery).
-- Frozen once merged: changes go in a new file. Times in Unix epoch milliseconds (_ms).

-- An endpoint is claimed by one worker at a time: busy_until_ms is that claim's lease and
-- busy_token its owner (null: not claimed). answered_at_ms is when an attempt last got an HTTP
-- answer (null: never); stalled_at_ms is since when its attempts have got none (timeouts,
-- refused connections; null once one is answered). Stalled endpoints are served last.
ALTER TABLE webhooks ADD COLUMN busy_until_ms INTEGER;
ALTER TABLE webhooks ADD COLUMN busy_token TEXT;
ALTER TABLE webhooks ADD COLUMN answered_at_ms INTEGER;
ALTER TABLE webhooks ADD COLUMN stalled_at_ms INTEGER;
CREATE INDEX webhooks_deleted ON webhooks (deleted_at_ms);

-- When a delivery ended (delivered or failed; null while pending): retention counts from it.
ALTER TABLE webhook_deliveries ADD COLUMN ended_at_ms INTEGER;
-- Existing rows: a delivery ended when it was delivered; a failed one at the latest when its
-- endpoint was deleted, else (its last attempt's time was not kept) now, so that none is
-- purged before a whole retention period has passed.
UPDATE webhook_deliveries SET ended_at_ms = delivered_at_ms WHERE status = 'delivered';
UPDATE webhook_deliveries
SET ended_at_ms = COALESCE(
  (SELECT w.deleted_at_ms FROM webhooks w WHERE w.id = webhook_deliveries.webhook_id),
  CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)
)
WHERE status = 'failed';
CREATE INDEX webhook_deliveries_ended ON webhook_deliveries (ended_at_ms);
-- An endpoint's due deliveries, oldest first (the claim).
CREATE INDEX webhook_deliveries_endpoint_due
  ON webhook_deliveries (webhook_id, status, next_attempt_at_ms);
