/**
 * Builds the shipped model price catalog `data/models.json` from LiteLLM's cost map.
 *
 * Usage: node dist/scripts/build-catalog.js LITELLM_PRICES_JSON (after `npm run build`)
 * where LITELLM_PRICES_JSON is LiteLLM's `model_prices_and_context_window.json` (BerriAI/litellm);
 * the shipped catalog was built from its main branch around 2026-07-24. Without the argument the
 * script prints its usage and exits 2 (docs/operations.md#model-prices).
 * Prices in the input are USD per token; the catalog stores USD per million tokens.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import {
  type CatalogFile,
  type CatalogModel,
  catalogFileSchema,
} from "../src/models/catalog-format.ts";
import { convertLitellm, LITELLM_PRICES_AS_OF } from "../src/models/litellm.ts";

/** Provenance recorded in the catalog file. */
const CATALOG_SOURCE =
  "LiteLLM model_prices_and_context_window.json (BerriAI/litellm, MIT), main branch around 2026-07-24";

/** One curated catalog entry: the LiteLLM key plus the catalog's own classification. */
interface Curated {
  key: string;
  tier: CatalogModel["tier"];
  /** Model maker, when the key is a third-party host's entry (e.g. Llama served by Groq). */
  provider?: string;
}

/** Current chat models shipped in the catalog, grouped by provider. */
const CURATED: Curated[] = [
  // OpenAI
  { key: "gpt-5.5", tier: "flagship" },
  { key: "gpt-5", tier: "flagship" },
  { key: "gpt-5-mini", tier: "economy" },
  { key: "gpt-5-nano", tier: "economy" },
  { key: "gpt-4.1", tier: "balanced" },
  { key: "gpt-4.1-mini", tier: "economy" },
  { key: "gpt-4.1-nano", tier: "economy" },
  { key: "gpt-4o", tier: "balanced" },
  { key: "gpt-4o-mini", tier: "economy" },
  { key: "o3", tier: "flagship" },
  { key: "o4-mini", tier: "economy" },
  // Anthropic
  { key: "claude-opus-4-6", tier: "flagship" },
  { key: "claude-opus-4-5", tier: "flagship" },
  { key: "claude-opus-4-1", tier: "flagship" },
  { key: "claude-sonnet-4-6", tier: "balanced" },
  { key: "claude-sonnet-4-5", tier: "balanced" },
  { key: "claude-haiku-4-5", tier: "economy" },
  // Google
  { key: "gemini-3-pro-preview", tier: "flagship" },
  { key: "gemini-2.5-pro", tier: "flagship" },
  { key: "gemini-3-flash-preview", tier: "economy" },
  { key: "gemini-2.5-flash", tier: "economy" },
  { key: "gemini-2.5-flash-lite", tier: "economy" },
  { key: "gemini-2.0-flash", tier: "economy" },
  // Mistral
  { key: "mistral/mistral-large-latest", tier: "flagship" },
  { key: "mistral/mistral-medium-latest", tier: "balanced" },
  { key: "mistral/mistral-small-latest", tier: "economy" },
  { key: "mistral/magistral-medium-latest", tier: "balanced" },
  { key: "mistral/codestral-latest", tier: "balanced" },
  // DeepSeek
  { key: "deepseek-reasoner", tier: "flagship" },
  { key: "deepseek-chat", tier: "balanced" },
  // xAI
  { key: "xai/grok-4", tier: "flagship" },
  { key: "xai/grok-4-fast-reasoning", tier: "economy" },
  { key: "xai/grok-3", tier: "balanced" },
  { key: "xai/grok-3-mini", tier: "economy" },
  { key: "xai/grok-code-fast-1", tier: "economy" },
  // Meta Llama, priced as served by Groq (modelId is Groq's model name)
  { key: "groq/meta-llama/llama-4-maverick-17b-128e-instruct", tier: "flagship", provider: "meta" },
  { key: "groq/llama-3.3-70b-versatile", tier: "balanced", provider: "meta" },
  { key: "groq/meta-llama/llama-4-scout-17b-16e-instruct", tier: "economy", provider: "meta" },
  { key: "groq/llama-3.1-8b-instant", tier: "economy", provider: "meta" },
];

/** Converts the curated keys and applies the curated tier/provider; fails on any missing key. */
function buildCatalog(map: Record<string, unknown>): CatalogFile {
  const { models, skipped } = convertLitellm(map, {
    only: CURATED.map((c) => c.key),
    pricesAsOf: LITELLM_PRICES_AS_OF,
  });
  if (skipped.length > 0) {
    const lines = skipped.map((s) => `  ${s.key}: ${s.reason}`).join("\n");
    throw new Error(`curated keys could not be converted:\n${lines}`);
  }
  const byKey = new Map(CURATED.map((c) => [`litellm:${c.key}`, c]));
  const curated = models.map((model) => {
    const { tier, provider } = byKey.get(model.source) as Curated;
    return { ...model, tier, provider: provider ?? model.provider };
  });
  return catalogFileSchema.parse({
    source: CATALOG_SOURCE,
    pricesAsOf: LITELLM_PRICES_AS_OF,
    models: curated,
  });
}

const USAGE = `Usage: node dist/scripts/build-catalog.js LITELLM_PRICES_JSON

Rebuilds data/models.json from LiteLLM's model_prices_and_context_window.json
(BerriAI/litellm), given as LITELLM_PRICES_JSON. The shipped catalog was built from
LiteLLM's main branch around ${LITELLM_PRICES_AS_OF}.
`;

/** Reads the LiteLLM file, writes `data/models.json`, prints the model count per provider. */
function main(): void {
  // The repository root, whether this runs compiled (dist/scripts/) or as TypeScript (scripts/).
  const root = fileURLToPath(
    new URL(import.meta.url.includes("/dist/") ? "../.." : "..", import.meta.url),
  );
  const arg = process.argv[2];
  if (arg === "--help" || arg === "-h") {
    process.stdout.write(USAGE);
    return;
  }
  if (!arg) {
    process.stderr.write(USAGE);
    process.exit(2);
  }
  const input = resolve(arg);
  const catalog = buildCatalog(JSON.parse(readFileSync(input, "utf8")));
  const output = resolve(root, "data/models.json");
  writeFileSync(output, `${JSON.stringify(catalog, null, 2)}\n`);
  const counts = new Map<string, number>();
  for (const m of catalog.models) counts.set(m.provider, (counts.get(m.provider) ?? 0) + 1);
  console.log(`wrote ${catalog.models.length} models to ${output}`);
  for (const [provider, n] of counts) console.log(`  ${provider}: ${n}`);
}

main();
