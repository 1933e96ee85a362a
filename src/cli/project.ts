/**
 * `ledger project set-price --project NAME CREDITS_PER_USD`: a project's credit price from the
 * command line, with the rules of `POST /v1/project/update` (docs/api.md#charging-usage-in-credits).
 */
import type { WriteQueue } from "../db/write-path.ts";
import { literalToMicros, MAX_AMOUNT_MICROS, MICROS_PER_UNIT } from "../money.ts";
import { projectIdByName, setCreditPrice } from "../projects/service.ts";

/**
 * The credit price that `text` gives, in micro-credits per USD: a decimal number > 0 with at
 * most 6 decimals and at most 1e9, or `null` (unset).
 * @throws Error with the rule it breaks
 */
export function parseCreditPrice(text: string): number | null {
  if (text === "null") return null;
  const micros = literalToMicros(text.trim());
  const limit = MAX_AMOUNT_MICROS / MICROS_PER_UNIT;
  if (micros === null || micros <= 0 || micros > MAX_AMOUNT_MICROS) {
    throw new Error(
      `credits per USD must be a number > 0 with at most 6 decimals and at most ${limit}, or null; got ${text}`,
    );
  }
  return micros;
}

/**
 * Sets the credit price of the project named `name` (`text` as `parseCreditPrice` reads it).
 * @returns the project's id and the price written (micro-credits per USD, or null)
 * @throws Error when the price is invalid or no project has that name
 */
export async function setProjectPrice(
  queue: WriteQueue,
  name: string,
  text: string,
): Promise<{ projectId: string; creditsPerUsdMicros: number | null }> {
  const creditsPerUsdMicros = parseCreditPrice(text);
  const projectId = await queue.run(async (trx) => {
    const id = await projectIdByName(trx, name);
    if (id === null) return null;
    await setCreditPrice(trx, id, creditsPerUsdMicros);
    return id;
  });
  if (projectId === null) throw new Error(`no project named ${name}`);
  return { projectId, creditsPerUsdMicros };
}
