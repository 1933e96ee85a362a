/**
 * Converter from LiteLLM's model cost map (`model_prices_and_context_window.json`,
 * BerriAI/litellm, MIT) to catalog entries.
 *
 * LiteLLM prices are USD per token; catalog prices are USD per million tokens. The conversion
 * is done in exact decimal arithmetic, never by multiplying floats.
 */
import {
  type CatalogModel,
  catalogModelSchema,
  MAX_PRICE_DECIMALS,
  splitDecimal,
} from "./catalog-format.ts";

/** Date of the shipped LiteLLM snapshot (main branch), used when no `pricesAsOf` is given. */
export const LITELLM_PRICES_AS_OF = "2026-07-24";

/** Options of `convertLitellm`. */
export interface ConvertOptions {
  /** Keep only models of this normalised provider (e.g. "google", "openai"). */
  provider?: string;
  /** Date the prices are valid for, YYYY-MM-DD. */
  pricesAsOf?: string;
  /** Take only these LiteLLM keys, in this order. */
  only?: string[];
}

/** Result of `convertLitellm`: converted models and every entry left out, with why. */
export interface ConvertResult {
  models: CatalogModel[];
  skipped: { key: string; reason: string }[];
}

/** LiteLLM provider names that map to a different catalog provider name. */
const PROVIDER_ALIASES: Record<string, string> = {
  "vertex_ai-language-models": "google",
  gemini: "google",
  "text-completion-openai": "openai",
  codestral: "mistral",
  "text-completion-codestral": "mistral",
};

/** Normalises a LiteLLM `litellm_provider` to the catalog's lower-case provider name. */
export function normaliseProvider(litellmProvider: string): string {
  const lower = litellmProvider.toLowerCase();
  return PROVIDER_ALIASES[lower] ?? lower;
}

/**
 * Converts a price in USD per token to USD per million tokens, exactly: shifts the decimal
 * point of the number's shortest decimal string 6 places and rounds to 6 decimals (half away
 * from zero) in BigInt arithmetic. 2.5e-6 → 2.5, 3e-8 → 0.03, 4e-7 → 0.4 (where the float
 * product 4e-7 × 1e6 is 0.39999999999999997).
 */
export function perTokenToPerMillion(usdPerToken: number): number {
  const { mantissa, exponent } = splitDecimal(usdPerToken);
  // Result in millionths of a USD per million tokens = mantissa × 10^(exponent + 6 + 6).
  const shift = exponent + 6 + MAX_PRICE_DECIMALS;
  const scaled =
    shift >= 0
      ? mantissa * 10n ** BigInt(shift)
      : divideRoundHalfUp(mantissa, 10n ** BigInt(-shift));
  return Number(formatScaled(scaled, MAX_PRICE_DECIMALS));
}

/** `numerator / divisor` rounded half away from zero; `divisor` must be positive. */
function divideRoundHalfUp(numerator: bigint, divisor: bigint): bigint {
  const magnitude = numerator < 0n ? -numerator : numerator;
  const rounded = (magnitude * 2n + divisor) / (divisor * 2n);
  return numerator < 0n ? -rounded : rounded;
}

/** Formats the integer `scaled × 10^-decimals` as a plain decimal string. */
function formatScaled(scaled: bigint, decimals: number): string {
  const sign = scaled < 0n ? "-" : "";
  const digits = (scaled < 0n ? -scaled : scaled).toString().padStart(decimals + 1, "0");
  return `${sign}${digits.slice(0, -decimals)}.${digits.slice(-decimals)}`;
}

/**
 * True when `json` looks like LiteLLM's cost map (an object whose entries carry
 * `litellm_provider` or `input_cost_per_token`); false for a catalog file (`models` array).
 */
export function isLitellmMap(json: unknown): boolean {
  if (!isRecord(json) || Array.isArray(json.models)) return false;
  return Object.values(json).some(
    (entry) => isRecord(entry) && ("litellm_provider" in entry || "input_cost_per_token" in entry),
  );
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * Removes a leading `provider/` segment when it names the entry's LiteLLM provider
 * ("xai/grok-4" → "grok-4", "groq/meta-llama/llama-4-scout" → "meta-llama/llama-4-scout").
 * Other leading segments (e.g. image sizes "1024-x-1024/…") are kept.
 */
export function stripProviderPrefix(key: string, litellmProvider: string): string {
  const slash = key.indexOf("/");
  if (slash < 0) return key;
  const norm = (s: string) => s.toLowerCase().replaceAll("-", "_");
  return norm(litellmProvider).startsWith(norm(key.slice(0, slash))) ? key.slice(slash + 1) : key;
}

/** Words whose display spelling is not just a capitalised first letter. */
const DISPLAY_WORDS: Record<string, string> = {
  deepseek: "DeepSeek",
  gpt: "GPT",
  fp8: "FP8",
  it: "IT",
};

/**
 * A readable name derived from a model id: "gpt-4o" → "GPT-4o", "claude-sonnet-4-5" →
 * "Claude Sonnet 4.5", "gemini-2.5-flash" → "Gemini 2.5 Flash", "o4-mini" → "o4-mini".
 */
export function displayNameFor(modelId: string): string {
  const base = modelId.slice(modelId.lastIndexOf("/") + 1).toLowerCase();
  if (/^o\d/.test(base)) return base;
  const words = mergeVersionParts(base.split("-").filter((w) => w !== "" && w !== "latest"));
  if (words[0] === "gpt" && words.length > 1) {
    return [`GPT-${words[1]}`, ...words.slice(2)].join(" ");
  }
  return words.map(displayWord).join(" ");
}

/** Joins runs of short numeric parts into versions: ["opus", "4", "1"] → ["opus", "4.1"]. */
function mergeVersionParts(words: string[]): string[] {
  const out: string[] = [];
  for (const word of words) {
    const last = out.at(-1);
    if (last !== undefined && /^\d{1,2}$/.test(word) && /^\d{1,2}(\.\d{1,2})*$/.test(last)) {
      out[out.length - 1] = `${last}.${word}`;
    } else {
      out.push(word);
    }
  }
  return out;
}

/** Display spelling of one id part: "70b" → "70B", "flash" → "Flash". */
function displayWord(word: string): string {
  if (DISPLAY_WORDS[word] !== undefined) return DISPLAY_WORDS[word];
  if (/^\d+(\.\d+)?[bekm]$/.test(word)) return word.toUpperCase();
  return word.charAt(0).toUpperCase() + word.slice(1);
}

const ECONOMY_WORDS = new Set([
  "mini",
  "nano",
  "flash",
  "haiku",
  "small",
  "lite",
  "instant",
  "tiny",
  "scout",
  "8b",
]);
const FLAGSHIP_WORDS = new Set(["opus", "pro", "large", "maverick", "reasoner"]);

/**
 * Heuristic tier from the id's words: mini/nano/flash/haiku/small/lite → economy;
 * opus/pro/large and the unsuffixed top models (gpt-5, o3, grok-4) → flagship; else balanced.
 */
export function tierFor(modelId: string): CatalogModel["tier"] {
  const id = modelId.toLowerCase();
  const words = id.split(/[-/_]/);
  if (words.some((w) => ECONOMY_WORDS.has(w))) return "economy";
  if (words.some((w) => FLAGSHIP_WORDS.has(w))) return "flagship";
  return /^(gpt-5(\.\d+)?|o[13]|grok-4)$/.test(id) ? "flagship" : "balanced";
}

/** A price field in USD per token, or undefined when absent or not a finite number. */
function perTokenField(entry: Record<string, unknown>, field: string): number | undefined {
  const value = entry[field];
  return typeof value === "number" && Number.isFinite(value) ? value : undefined;
}

/** Context window (max input tokens) of an entry: `max_input_tokens`, else `max_tokens`. */
function contextWindowOf(entry: Record<string, unknown>): number | undefined {
  const value = entry.max_input_tokens ?? entry.max_tokens;
  return typeof value === "number" && Number.isInteger(value) && value > 0 ? value : undefined;
}

/** Converts one LiteLLM entry, or returns why it is skipped. */
function convertEntry(key: string, entry: unknown, pricesAsOf: string): CatalogModel | string {
  if (key === "sample_spec") return "LiteLLM sample_spec (documentation entry)";
  if (!isRecord(entry)) return "entry is not an object";
  if (entry.mode !== "chat") return `mode is ${JSON.stringify(entry.mode)}, not "chat"`;
  if (typeof entry.litellm_provider !== "string") return "no litellm_provider";
  const input = perTokenField(entry, "input_cost_per_token");
  const output = perTokenField(entry, "output_cost_per_token");
  if (input === undefined || output === undefined) return "missing input/output price per token";
  const contextWindow = contextWindowOf(entry);
  if (contextWindow === undefined) return "missing max_input_tokens / max_tokens";
  const cached = perTokenField(entry, "cache_read_input_token_cost");
  const modelId = stripProviderPrefix(key, entry.litellm_provider);
  const candidate = {
    modelId,
    provider: normaliseProvider(entry.litellm_provider),
    displayName: displayNameFor(modelId),
    modelType: entry.supports_vision === true ? "multimodal" : "text",
    tier: tierFor(modelId),
    pricing: {
      text: {
        inputPerMillion: perTokenToPerMillion(input),
        outputPerMillion: perTokenToPerMillion(output),
        ...(cached === undefined ? {} : { cachedInputPerMillion: perTokenToPerMillion(cached) }),
      },
      contextWindow,
    },
    source: `litellm:${key}`,
    pricesAsOf,
  };
  const parsed = catalogModelSchema.safeParse(candidate);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  return `invalid ${issue?.path.join(".") ?? "entry"}: ${issue?.message ?? "?"}`;
}

/**
 * Converts LiteLLM's cost map (prices in USD per token) into catalog models (USD per million
 * tokens). Takes `mode: "chat"` entries with numeric input/output prices and a context window;
 * everything else is reported in `skipped`. When several keys give the same modelId, the first
 * key without a provider prefix wins (else the first key).
 */
export function convertLitellm(
  map: Record<string, unknown>,
  opts: ConvertOptions = {},
): ConvertResult {
  const pricesAsOf = opts.pricesAsOf ?? LITELLM_PRICES_AS_OF;
  const wanted = opts.provider?.toLowerCase();
  const skipped: ConvertResult["skipped"] = [];
  const candidates: CatalogModel[] = [];
  for (const key of opts.only ?? Object.keys(map)) {
    const result = Object.hasOwn(map, key)
      ? convertEntry(key, map[key], pricesAsOf)
      : "key not in map";
    if (typeof result === "string") skipped.push({ key, reason: result });
    else if (wanted !== undefined && result.provider !== wanted) {
      skipped.push({ key, reason: `provider "${result.provider}" is not "${wanted}"` });
    } else candidates.push(result);
  }
  return { models: dedupeByModelId(candidates, skipped), skipped };
}

/** Keeps one model per modelId (first un-prefixed key, else first); reports the rest. */
function dedupeByModelId(
  candidates: CatalogModel[],
  skipped: ConvertResult["skipped"],
): CatalogModel[] {
  const keyOf = (m: CatalogModel) => m.source.slice("litellm:".length);
  const winners = new Map<string, CatalogModel>();
  for (const model of candidates) {
    const current = winners.get(model.modelId);
    if (
      current === undefined ||
      (keyOf(current) !== current.modelId && keyOf(model) === model.modelId)
    ) {
      winners.set(model.modelId, model);
    }
  }
  const kept = new Set(winners.values());
  for (const model of candidates) {
    if (kept.has(model)) continue;
    const winner = winners.get(model.modelId);
    skipped.push({
      key: keyOf(model),
      reason: `duplicate modelId "${model.modelId}" (kept ${winner ? keyOf(winner) : "?"})`,
    });
  }
  return candidates.filter((m) => kept.has(m));
}
