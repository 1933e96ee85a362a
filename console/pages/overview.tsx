/**
 * Overview: the project's totals, its number of accounts and the credits outstanding (the sum
 * of every account's balance, reserved credits included), and its usage of the last 30 days by
 * day and by model.
 *
 * The totals come from the public API like every figure of the console: the account list
 * (`GET /v1/accounts`) read page by page, 500 accounts to a page, its balances added exactly
 * with the client's `addAmounts` (never through a double). Pages read one after another are not
 * one snapshot: credits that move while they are read may be counted as of either moment.
 */
import { addAmounts } from "../../src/client/amounts.ts";
import { call, int } from "../api.ts";
import { Amount, Status, useLoad } from "../components.tsx";
import type { AccountList } from "../types.ts";
import { UsageSection } from "./account-usage.tsx";

const PAGE = 500;

/** Every page of the account list: the count and the exact sum of the balances. */
async function loadTotals(): Promise<{ accounts: number; outstanding: string }> {
  let offset = 0;
  let outstanding = addAmounts();
  let accounts = 0;
  for (;;) {
    const page = await call<AccountList>("GET", "v1/accounts", { query: { limit: PAGE, offset } });
    outstanding = addAmounts(outstanding, ...page.accounts.map((a) => a.balance));
    accounts = page.pagination ? int(page.pagination.totalCount) : page.accounts.length;
    if (!page.pagination?.hasMore || page.accounts.length === 0) break;
    offset += page.accounts.length;
  }
  return { accounts, outstanding: String(outstanding) };
}

export function OverviewPage() {
  const loaded = useLoad(loadTotals, []);
  const totals = loaded.data;
  return (
    <main>
      <h1>Overview</h1>
      <section aria-labelledby="totals">
        <h2 id="totals">Totals</h2>
        <Status loaded={loaded} />
        {totals && (
          <dl class="balances">
            <div>
              <dt>Accounts</dt>
              <dd>
                <a href="#/accounts">
                  <Amount value={totals.accounts} />
                </a>
              </dd>
            </div>
            <div>
              <dt>Credits outstanding</dt>
              <dd>
                <Amount value={totals.outstanding} />
              </dd>
            </div>
          </dl>
        )}
      </section>
      <UsageSection />
    </main>
  );
}
