-- 0009 for PostgreSQL: a project's credit price and what each usage record was charged in
-- credits; the same columns and indexes as sql/0009_credit_price.sql
-- (docs/api.md#charging-usage-in-credits). Frozen once merged.
ALTER TABLE projects ADD COLUMN credits_per_usd_micros BIGINT
  CHECK (credits_per_usd_micros IS NULL OR credits_per_usd_micros > 0);
ALTER TABLE usage_records ADD COLUMN credits_charged_micros BIGINT
  CHECK (credits_charged_micros IS NULL OR credits_charged_micros >= 0);

DROP INDEX usage_project_model;
DROP INDEX usage_project_account;
CREATE INDEX usage_project_model ON usage_records (project_id, model_id, context, created_at_ms)
  INCLUDE (input_tokens, cached_tokens, output_tokens, cost_micro_usd, cost_pico_rem,
    credits_charged_micros);
CREATE INDEX usage_project_account ON usage_records (project_id, account_id, created_at_ms)
  INCLUDE (input_tokens, cached_tokens, output_tokens, cost_micro_usd, cost_pico_rem,
    credits_charged_micros);
