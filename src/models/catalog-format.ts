/**
 * Format of the shipped model price catalog (`data/models.json`).
 *
 * All prices are USD per million tokens, as exact decimals with at most 6 decimal places.
 */
import { z } from "zod";

/** Highest accepted price, in USD per million tokens (guards against per-token/per-million mix-ups). */
export const MAX_PRICE_PER_MILLION = 1000;

/** Most decimal places a catalog price (USD per million tokens) may carry. */
export const MAX_PRICE_DECIMALS = 6;

/** Accepted values of `CatalogModel.tier`. */
export const MODEL_TIERS = ["flagship", "balanced", "economy"] as const;

/** Accepted values of `CatalogModel.modelType`. */
export const MODEL_TYPES = ["text", "multimodal"] as const;

/**
 * Splits a finite number into an exact decimal `mantissa × 10^exponent`, read from the shortest
 * decimal string JavaScript prints for it (so 0.1 is 1 × 10^-1, 2.5e-6 is 25 × 10^-7).
 * Throws on NaN and ±Infinity.
 */
export function splitDecimal(value: number): { mantissa: bigint; exponent: number } {
  const match = /^(-?)(\d+)(?:\.(\d+))?(?:e([+-]?\d+))?$/.exec(String(value));
  if (!Number.isFinite(value) || match === null) {
    throw new RangeError(`not a finite number: ${value}`);
  }
  const [, sign = "", intPart = "", fracPart = "", exp = "0"] = match;
  return {
    mantissa: BigInt(`${sign}${intPart}${fracPart}`),
    exponent: Number(exp) - fracPart.length,
  };
}

/** Number of decimal places in the shortest decimal string of `value` (1e-7 → 7, 2.5 → 1, 10 → 0). */
export function decimalPlaces(value: number): number {
  return Math.max(0, -splitDecimal(value).exponent);
}

/** A price in USD per million tokens: finite, 0..1000, at most 6 decimal places. */
const pricePerMillionSchema = z
  .number() // zod 4 numbers already reject NaN and ±Infinity
  .min(0)
  .max(MAX_PRICE_PER_MILLION)
  .refine((n) => decimalPlaces(n) <= MAX_PRICE_DECIMALS, {
    message: `at most ${MAX_PRICE_DECIMALS} decimal places`,
  });

const idSchema = z.string().min(1).max(255);

/** Text-token prices of one model, USD per million tokens. */
const textPricingSchema = z.strictObject({
  inputPerMillion: pricePerMillionSchema,
  outputPerMillion: pricePerMillionSchema,
  cachedInputPerMillion: pricePerMillionSchema.optional(),
});

/** One model in the catalog: identity, classification and prices (USD per million tokens). */
export const catalogModelSchema = z.strictObject({
  modelId: idSchema,
  provider: idSchema,
  displayName: z.string().min(1).max(255),
  modelType: z.enum(MODEL_TYPES),
  tier: z.enum(MODEL_TIERS),
  pricing: z.strictObject({
    text: textPricingSchema,
    /** Maximum input tokens. */
    contextWindow: z.number().int().positive(),
  }),
  source: z.string().min(1).max(500),
  pricesAsOf: z.iso.date(),
});

/** The catalog file: provenance plus models with unique `modelId`s. */
export const catalogFileSchema = z
  .strictObject({
    source: z.string().min(1),
    pricesAsOf: z.iso.date(),
    models: z.array(catalogModelSchema),
  })
  .superRefine((file, ctx) => {
    const seen = new Set<string>();
    file.models.forEach((model, index) => {
      if (seen.has(model.modelId)) {
        ctx.addIssue({
          code: "custom",
          message: `duplicate modelId "${model.modelId}"`,
          path: ["models", index, "modelId"],
        });
      }
      seen.add(model.modelId);
    });
  });

export type CatalogModel = z.infer<typeof catalogModelSchema>;
export type CatalogFile = z.infer<typeof catalogFileSchema>;
