-- 0005: covering indexes for the usage summary and its groups (docs/design.md#usage-summary-indexes).
-- Frozen once merged.
--
-- Every usage summary sums the selected records per (model, context); groupBy=account sums them
-- per account. Without these, SQLite reads each record's row by the rowid found in another index
-- and sorts all of them for the GROUP BY: about 3.5 s for a million records. These indexes hold
-- every column the sums read, in the order of the GROUP BY, so the database reads one index in
-- order and sorts nothing (0.3 to 0.5 s for a million).

CREATE INDEX usage_project_model ON usage_records
  (project_id, model_id, context, created_at_ms,
   input_tokens, cached_tokens, output_tokens, cost_micro_usd, cost_pico_rem);

CREATE INDEX usage_project_account ON usage_records
  (project_id, account_id, created_at_ms,
   input_tokens, cached_tokens, output_tokens, cost_micro_usd, cost_pico_rem);
