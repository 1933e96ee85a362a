-- 0012: one index entry fewer per usage record (docs/design.md#usage-charges). Frozen once merged.
--
-- usage_account (account_id, created_at_ms, seq) duplicated usage_project_account of 0009: a
-- usage list, summary or export of one account names its project too (src/usage/service.ts
-- `filteredUsage`). usage_project_account now carries `seq` after the time, so it gives an
-- account's records in the list's and the export's order, and the model and context, so it
-- covers an account's summary (src/usage/summary.ts). Each usage record, and each charge with
-- `deduct: true`, wrote an entry at a random place of both per-account indexes; now of one.
DROP INDEX usage_account;
DROP INDEX usage_project_account;
CREATE INDEX usage_project_account ON usage_records
  (project_id, account_id, created_at_ms, seq, model_id, context,
   input_tokens, cached_tokens, output_tokens, cost_micro_usd, cost_pico_rem,
   credits_charged_micros);
