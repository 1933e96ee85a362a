/**
 * How `ledger keys list` prints keys without `--json`. The keys themselves (creating, listing,
 * revoking) are src/db/api-keys.ts's.
 */
import type { KeyListing } from "../db/api-keys.ts";

/** The text form of `ledger keys list`: one aligned line per key, a header first. */
export function formatKeyTable(keys: KeyListing[]): string {
  const rows = [
    ["KEY ID", "PROJECT", "PROJECT ID", "CREATED", "REVOKED"],
    ...keys.map((k) => [k.keyId, k.projectName, k.projectId, k.createdAt, k.revokedAt ?? "-"]),
  ];
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => r[i]?.length ?? 0))) ?? [];
  return rows
    .map((r) =>
      r
        .map((cell, i) => cell.padEnd(widths[i] ?? 0))
        .join("  ")
        .trimEnd(),
    )
    .join("\n");
}
