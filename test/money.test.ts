import { describe, expect, it } from "vitest";
import {
  costPicoUsd,
  fromMicros,
  literalToMicros,
  MAX_BALANCE_MICROS,
  picoUsdToDecimal,
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

  it("round-trips through fromMicros to the same decimal literal", () => {
    for (const x of [
      0.1, 0.2, 0.3, 0.7, 1.1, 2.675, 9_000_000_000, 8_999_999_999.5, 123_456.654321,
    ]) {
      expect(fromMicros(toMicros(x) as number).literal).toBe(String(x));
      expect(fromMicros(toMicros(x) as number).toJSON()).toBe(x);
    }
    expect(fromMicros((toMicros(0.1) as number) + (toMicros(0.2) as number)).literal).toBe("0.3");
  });

  it("writes every balance as its exact literal, past 2^33 credits too", () => {
    // 8 × 1e9 + 600000000.000001: a double would print 8600000000.000002.
    expect(fromMicros(8_600_000_000_000_001).literal).toBe("8600000000.000001");
    expect(fromMicros(8_999_999_999_999_999).literal).toBe("8999999999.999999");
    expect(fromMicros(-300_000).literal).toBe("-0.3");
    expect(fromMicros(0).literal).toBe("0");
  });

  it("keeps the largest balance below 2^53 micro-credits", () => {
    expect(MAX_BALANCE_MICROS).toBeLessThan(Number.MAX_SAFE_INTEGER);
  });
});

describe("literalToMicros", () => {
  it("converts JSON number text exactly, never through a double", () => {
    expect(literalToMicros("0.3")).toBe(300_000);
    expect(literalToMicros("1e-6")).toBe(1);
    expect(literalToMicros("1.5E3")).toBe(1_500_000_000);
    expect(literalToMicros("1.0000000")).toBe(1_000_000);
    expect(literalToMicros("-0")).toBe(0);
    expect(literalToMicros("600000000.000001")).toBe(600_000_000_000_001);
  });

  it("refuses literals a double would round to 6 decimals", () => {
    expect(literalToMicros("0.30000000000000001")).toBeNull();
    expect(literalToMicros("1.0000000000000000000001")).toBeNull();
    expect(literalToMicros("1e-7")).toBeNull();
    expect(literalToMicros("1e400")).toBeNull();
    expect(literalToMicros("1e99999999")).toBeNull();
    expect(literalToMicros("01")).toBeNull();
    expect(literalToMicros("NaN")).toBeNull();
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
    expect(picoUsdToDecimal(pico).literal).toBe("0.00725");
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
