/**
 * The ledger's columns of pools and transfers (docs/api.md#pools-and-members, #transfers;
 * account-ledger.tsx): the member a pool's entry was booked for (`onBehalfOf`, a link to its
 * page) and the transfer an entry is a half of (`transferId`, marked in or out).
 */
import type { Column } from "../components.tsx";
import type { Transaction } from "../types.ts";
import { AccountLink } from "./account-links.tsx";

/**
 * The columns of the member an entry was booked for and of the transfer it is a half of, each
 * only while `rows` have one, so that an account without pool or transfers keeps a narrow table.
 */
export function partyColumns(rows: readonly Transaction[]): Column<Transaction>[] {
  const columns: Column<Transaction>[] = [];
  if (rows.some((t) => t.onBehalfOf)) {
    columns.push({
      label: "On behalf of",
      cell: (t) => (t.onBehalfOf ? <AccountLink id={t.onBehalfOf} /> : "–"),
    });
  }
  if (rows.some((t) => t.transferId)) {
    columns.push({
      label: "Transfer",
      cell: (t) =>
        t.transferId ? (
          <span>
            <span class="badge transfer">
              {t.type === "debit" ? "transfer out" : "transfer in"}
            </span>{" "}
            <code>{t.transferId}</code>
          </span>
        ) : (
          "–"
        ),
    });
  }
  return columns;
}
