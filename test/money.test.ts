import { describe, expect, it } from "vitest";
import {
  costPicoUsd,
  fromMicros,
  MAX_BALANCE_MICROS,
  picoUsdToNumber,
  picoUsdToString,
  toMicros,
} from "../src/money.ts";

describe("toMicros", () => {
  it("converts numbers with up to 6 decimals exactly", () => {
    expect(toMicros(0.3)).toBe(300_000);
    expect(toMicros(1)).toBe(1_000_000);
    expect(toMicros(0.000001)).toBe(1);
    expect(toMicros(123456.789012)).toBe(123_456_789_012);
    expect(toMicros(1e9)).toBe(1e15);
    expect(toMicros(-2.5)).toBe(-2_500_000);
    expect(toMicros(1e-6)).toBe(1);
  });

  it("refuses more than 6 decimals, float noise and non-finite numbers", () => {
    expect(toMicros(0.1 + 0.2)).toBeNull();
    expect(toMicros(0.0000001)).toBeNull();
    expect(toMicros(1.0000001)).toBeNull();
    expect(toMicros(Number.POSITIVE_INFINITY)).toBeNull();
    expect(toMicros(Number.NaN)).toBeNull();
    expect(toMicros(1e300)).toBeNull();
  });

  it("round-trips through fromMicros to the same JSON number", () => {
    for (const x of [
      0.1, 0.2, 0.3, 0.7, 1.1, 2.675, 9_000_000_000, 8_999_999_999.5, 123_456.654321,
    ]) {
      expect(fromMicros(toMicros(x) as number)).toBe(x);
    }
    expect(fromMicros(toMicros(0.1) as number) + 0).toBe(0.1);
    expect(fromMicros((toMicros(0.1) as number) + (toMicros(0.2) as number))).toBe(0.3);
  });

  it("keeps the largest balance below 2^53 micro-credits", () => {
    expect(MAX_BALANCE_MICROS).toBeLessThan(Number.MAX_SAFE_INTEGER);
  });
});

describe("costPicoUsd", () => {
  const gpt4o = {
    inputMicrosPerM: 2_500_000,
    outputMicrosPerM: 10_000_000,
    cachedMicrosPerM: 1_250_000,
  };

  it("applies the cost formula exactly (docs/api.md#cost-formula)", () => {
    const pico = costPicoUsd({ inputTokens: 1000, outputTokens: 500, cachedTokens: 200 }, gpt4o);
    // 800 × 2.5 + 200 × 1.25 + 500 × 10 = 7,250 micro-USD per million = 0.00725 USD
    expect(pico).toBe(7_250_000_000n);
    expect(picoUsdToString(pico)).toBe("0.00725");
    expect(picoUsdToNumber(pico)).toBe(0.00725);
  });

  it("charges cached tokens at the input price when the model has no cached price", () => {
    const price = { inputMicrosPerM: 500_000, outputMicrosPerM: 1_500_000, cachedMicrosPerM: null };
    const pico = costPicoUsd({ inputTokens: 1000, outputTokens: 0, cachedTokens: 1000 }, price);
    expect(picoUsdToString(pico)).toBe("0.0005");
  });

  it("keeps sub-micro-dollar precision and huge counts exact", () => {
    const cheap = { inputMicrosPerM: 28_000, outputMicrosPerM: 0, cachedMicrosPerM: null };
    expect(
      picoUsdToString(costPicoUsd({ inputTokens: 1, outputTokens: 0, cachedTokens: 0 }, cheap)),
    ).toBe("0.000000028");
    const huge = {
      inputMicrosPerM: 1_000_000_000,
      outputMicrosPerM: 1_000_000_000,
      cachedMicrosPerM: null,
    };
    const pico = costPicoUsd({ inputTokens: 1e9, outputTokens: 1e9, cachedTokens: 0 }, huge);
    expect(pico).toBe(2n * 10n ** 18n);
    expect(picoUsdToString(pico)).toBe("2000000");
  });
});
