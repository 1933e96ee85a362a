/**
 * The model catalog as shipped (data/models.json), read exactly: each model's prices in micro-USD
 * per million tokens, for the credit cost of usage (contract sections 9 and 21).
 */
import { readFileSync } from "node:fs";
import { at, microsAt, parseLossless, stringAt } from "./exact.ts";
import type { Price } from "./ops.ts";

/** The catalog's prices as shipped (data/models.json), read exactly. */
export function catalogPrices(): Record<string, Price> {
  const text = readFileSync(new URL("../../data/models.json", import.meta.url), "utf8");
  const models = at(parseLossless(text), "models");
  if (!Array.isArray(models)) throw new Error("data/models.json has no models");
  const prices: Record<string, Price> = {};
  for (const model of models) {
    const id = stringAt(model, "modelId");
    const input = microsAt(model, "pricing.text.inputPerMillion");
    const output = microsAt(model, "pricing.text.outputPerMillion");
    const cached = microsAt(model, "pricing.text.cachedInputPerMillion");
    if (id === undefined || typeof input !== "number" || typeof output !== "number") continue;
    if (input === 0 || output === 0) continue;
    prices[id] = {
      input: BigInt(input),
      output: BigInt(output),
      cached: typeof cached === "number" ? BigInt(cached) : null,
    };
  }
  return prices;
}
