-- 0009: a project's credit price and what each usage record was charged in credits
-- (docs/api.md#charging-usage-in-credits, docs/design.md#usage-charges). Frozen once merged.
--
-- credits_per_usd_micros: how many credits one USD of model cost is, in micro-credits per USD
-- (100 credits per USD = 100000000); null until the project sets it.
-- credits_charged_micros: the debit a usage record was charged with `deduct: true` or a confirm
-- with `usage`, in micro-credits (0 for a cost of 0); null for a record made without a charge.
ALTER TABLE projects ADD COLUMN credits_per_usd_micros INTEGER
  CHECK (credits_per_usd_micros IS NULL OR credits_per_usd_micros > 0);
ALTER TABLE usage_records ADD COLUMN credits_charged_micros INTEGER
  CHECK (credits_charged_micros IS NULL OR credits_charged_micros >= 0);

-- The usage summary also sums credits_charged_micros: the covering indexes of 0005 carry it, so
-- a summary still reads one index in GROUP BY order and no row.
DROP INDEX usage_project_model;
DROP INDEX usage_project_account;
CREATE INDEX usage_project_model ON usage_records
  (project_id, model_id, context, created_at_ms,
   input_tokens, cached_tokens, output_tokens, cost_micro_usd, cost_pico_rem,
   credits_charged_micros);
CREATE INDEX usage_project_account ON usage_records
  (project_id, account_id, created_at_ms,
   input_tokens, cached_tokens, output_tokens, cost_micro_usd, cost_pico_rem,
   credits_charged_micros);
