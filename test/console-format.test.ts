/**
 * The console's words and numbers for a person (contract section 16), outside the browser:
 * digits grouped by thousands from the API's exact literals (console/format.ts), usage credits
 * as `creditsCharged` less `creditsReversed`, and a sentence for every error code of the API
 * (console/errors.ts), no more and no fewer than src/errors.ts defines.
 */
import { LosslessNumber } from "lossless-json";
import { describe, expect, it } from "vitest";
import { ERROR_SENTENCES, explainApiError, explainOtherError } from "../console/errors.ts";
import { creditsUsed, groupDigits } from "../console/format.ts";
import { ERROR_STATUS, type ErrorCode } from "../src/errors.ts";

describe("digits grouped by thousands", () => {
  it.each([
    ["0", "0"],
    ["97", "97"],
    ["999", "999"],
    ["1000", "1,000"],
    ["-1234.5", "-1,234.5"],
    ["9000000000", "9,000,000,000"],
    // Beyond a double's 15–17 digits: grouped from the text, every digit kept.
    ["17600000628.965079", "17,600,000,628.965079"],
    ["123456789012345678901234.000000000001", "123,456,789,012,345,678,901,234.000000000001"],
    ["0.000001", "0.000001"],
    ["1000.0001234", "1,000.0001234"],
  ])("%s → %s", (literal, shown) => {
    expect(groupDigits(literal)).toBe(shown);
  });

  it("leaves what is not a plain decimal as it is", () => {
    for (const text of ["1e21", "–", "", "12a", "1,000"]) expect(groupDigits(text)).toBe(text);
  });
});

describe("usage in credits", () => {
  const n = (literal: string) => new LosslessNumber(literal);

  it("is creditsCharged, digit for digit, while the API has no creditsReversed", () => {
    expect(creditsUsed({ creditsCharged: n("6.960") })).toBe("6.960");
    expect(creditsUsed({ creditsCharged: n("8600000000.000001") })).toBe("8600000000.000001");
  });

  it("is creditsCharged less creditsReversed, exactly", () => {
    expect(creditsUsed({ creditsCharged: n("8600000000.000001"), creditsReversed: n("0.1") })).toBe(
      "8599999999.900001",
    );
    expect(creditsUsed({ creditsCharged: n("0.3"), creditsReversed: n("0.3") })).toBe("0");
  });

  it("is unknown when the API sent no creditsCharged", () => {
    expect(creditsUsed(undefined)).toBeUndefined();
    expect(creditsUsed({ creditsCharged: null })).toBeUndefined();
  });
});

describe("API errors as sentences", () => {
  it("has a sentence for every error code of the API, and for no other", () => {
    // The same keys, checked by the compiler too.
    const sentences: Record<ErrorCode, unknown> = ERROR_SENTENCES;
    expect(Object.keys(sentences).sort()).toEqual(Object.keys(ERROR_STATUS).sort());
    for (const { sentence } of Object.values(ERROR_SENTENCES)) {
      expect(sentence).toMatch(/^[A-Z].*[.!]$/);
      expect(sentence).not.toMatch(/\b[A-Z]+_[A-Z_]+\b/);
    }
  });

  it("keeps the API's message as the detail where it says more", () => {
    expect(explainApiError("ACCOUNT_NOT_FOUND", 404, "Account acct-9 not found")).toEqual({
      sentence: "There is no such account in this project.",
      detail: "Account acct-9 not found",
      code: "ACCOUNT_NOT_FOUND",
    });
    expect(explainApiError("UNAUTHORIZED", 401, "Missing or invalid API key: …")).toEqual({
      sentence: "This API key was not accepted: it is wrong, or it was revoked.",
      detail: undefined,
      code: "UNAUTHORIZED",
    });
  });

  it("words an unknown code by its HTTP status, and a failed fetch as unreachable", () => {
    expect(explainApiError("HTTP_502", 502, "HTTP 502")).toEqual({
      sentence: "The service answered with an error (HTTP status 502).",
      detail: undefined,
      code: "HTTP_502",
    });
    expect(explainOtherError(new TypeError("Failed to fetch")).sentence).toBe(
      "The service could not be reached. Check the connection and try again.",
    );
  });
});
