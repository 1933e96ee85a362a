-- 0005 for PostgreSQL: covering indexes for the usage summary and its groups; the same indexes as
-- sql/0005_usage_summary.sql (docs/design.md#usage-summary-indexes). Frozen once merged.
--
-- The summed columns are INCLUDEd (kept in the leaves only): the summary reads them with an
-- index-only scan in the order of its GROUP BY, and groupBy=account stops after 1,001 groups.

CREATE INDEX usage_project_model ON usage_records (project_id, model_id, context, created_at_ms)
  INCLUDE (input_tokens, cached_tokens, output_tokens, cost_micro_usd, cost_pico_rem);

CREATE INDEX usage_project_account ON usage_records (project_id, account_id, created_at_ms)
  INCLUDE (input_tokens, cached_tokens, output_tokens, cost_micro_usd, cost_pico_rem);
