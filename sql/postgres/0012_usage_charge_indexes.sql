-- 0012 for PostgreSQL: the same indexes as sql/0012_usage_charge_indexes.sql, the summed columns
-- INCLUDEd as in 0009 (docs/design.md#usage-charges). Frozen once merged.
DROP INDEX usage_account;
DROP INDEX usage_project_account;
CREATE INDEX usage_project_account ON usage_records (project_id, account_id, created_at_ms, seq)
  INCLUDE (model_id, context, input_tokens, cached_tokens, output_tokens, cost_micro_usd,
    cost_pico_rem, credits_charged_micros);
