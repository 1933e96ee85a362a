/**
 * One account: its parent, its children and its pool (account-tree.tsx), its balances (a
 * member's are its pool's), the add, deduct and transfer actions, its spend limits' current
 * windows, its plan assignment, its purchases through Stripe (account-purchases.tsx), its
 * automatic top-up and its attempts (account-auto-topup.tsx), its usage of the last 30 days, its
 * grants, its pending reservations, its ledger (with its reversals and transfers, and one
 * entry's thread at `#/accounts/<id>/transactions/<id>`), and its exports as downloads. Every
 * number comes from the `/v1` API.
 */
import { useState } from "hono/jsx/dom";
import { call } from "../api.ts";
import {
  Amount,
  type Column,
  DataTable,
  Pager,
  Status,
  useLoad,
  When,
  Word,
} from "../components.tsx";
import type { Account, Balance, Grant, Pagination, Reservation } from "../types.ts";
import { AutoTopupSection } from "./account-auto-topup.tsx";
import { ExportsSection } from "./account-exports.tsx";
import { LedgerSection } from "./account-ledger.tsx";
import { LimitsSection } from "./account-limits.tsx";
import { AccountLink, rememberAccount } from "./account-links.tsx";
import { PlanSection } from "./account-plan.tsx";
import { PurchasesSection } from "./account-purchases.tsx";
import { TreeSection } from "./account-tree.tsx";
import { UsageSection } from "./account-usage.tsx";
import { CreditActions } from "./credit-actions.tsx";
import { TransferAction } from "./transfer-action.tsx";

const PAGE = 20;

function Balances({ accountId, version }: { accountId: string; version: number }) {
  const loaded = useLoad(
    () => call<Balance>("GET", "v1/accounts/balance", { query: { accountId } }),
    [accountId, version],
  );
  const b = loaded.data;
  return (
    <section aria-labelledby="balances">
      <h2 id="balances">Balances</h2>
      <Status loaded={loaded} />
      {b && (
        <dl class="balances">
          <div>
            <dt>Balance</dt>
            <dd>
              <Amount value={b.balance} />
            </dd>
          </div>
          <div>
            <dt>Reserved</dt>
            <dd>
              <Amount value={b.reserved} />
            </dd>
          </div>
          <div>
            <dt>Available</dt>
            <dd>
              <Amount value={b.available} />
            </dd>
          </div>
        </dl>
      )}
      {b && b.fundedBy !== accountId && (
        <p class="muted">
          The figures of its pool, <AccountLink id={b.fundedBy} />.
        </p>
      )}
    </section>
  );
}

const grantColumns: Column<Grant>[] = [
  { label: "Created", cell: (g) => <When at={g.createdAt} /> },
  { label: "Amount", end: true, cell: (g) => <Amount value={g.amount} /> },
  { label: "Remaining", end: true, cell: (g) => <Amount value={g.remaining} /> },
  { label: "Priority", end: true, cell: (g) => <Amount value={g.priority} /> },
  {
    label: "Expires",
    cell: (g) => (g.expiresAt ? <When at={g.expiresAt} /> : <Word>never</Word>),
  },
  { label: "Status", cell: (g) => <span class={`badge ${g.status}`}>{g.status}</span> },
];

function Grants({ accountId, version }: { accountId: string; version: number }) {
  const [offset, setOffset] = useState(0);
  const loaded = useLoad(
    () =>
      call<{ grants: Grant[]; pagination: Pagination }>("GET", "v1/accounts/grants", {
        query: { accountId, limit: PAGE, offset },
      }),
    [accountId, offset, version],
  );
  const grants = loaded.data?.grants ?? [];
  return (
    <section aria-labelledby="grants">
      <h2 id="grants">Grants</h2>
      <Status loaded={loaded} />
      {loaded.data && grants.length === 0 && <p class="muted">No grants.</p>}
      {grants.length > 0 && (
        <DataTable label="Grants" columns={grantColumns} rows={grants} rowKey={(g) => g.id} />
      )}
      <Pager
        label="Grants"
        pagination={loaded.data?.pagination}
        shown={grants.length}
        onOffset={setOffset}
      />
    </section>
  );
}

const holdColumns: Column<Reservation>[] = [
  { label: "Created", cell: (r) => <When at={r.createdAt} /> },
  { label: "Amount", end: true, cell: (r) => <Amount value={r.amount} /> },
  { label: "Expires", cell: (r) => <When at={r.expiresAt} /> },
  {
    label: "Operation",
    cell: (r) => (typeof r.metadata.operation === "string" ? r.metadata.operation : "–"),
  },
];

function PendingReservations({ accountId, version }: { accountId: string; version: number }) {
  const [offset, setOffset] = useState(0);
  const loaded = useLoad(
    () =>
      call<{ reservations: Reservation[]; pagination: Pagination }>("GET", "v1/reservations", {
        query: { accountId, activeOnly: true, limit: PAGE, offset },
      }),
    [accountId, offset, version],
  );
  const holds = loaded.data?.reservations ?? [];
  return (
    <section aria-labelledby="reservations">
      <h2 id="reservations">Pending reservations</h2>
      <Status loaded={loaded} />
      {loaded.data && holds.length === 0 && <p class="muted">No pending reservations.</p>}
      {holds.length > 0 && (
        <DataTable
          label="Pending reservations"
          columns={holdColumns}
          rows={holds}
          rowKey={(r) => r.id}
        />
      )}
      <Pager
        label="Pending reservations"
        pagination={loaded.data?.pagination}
        shown={holds.length}
        onOffset={setOffset}
      />
    </section>
  );
}

export function AccountPage({
  accountId,
  transactionId,
}: {
  accountId: string;
  /** The ledger entry whose thread the ledger shows (account-ledger.tsx), if any. */
  transactionId?: string | undefined;
}) {
  // Moves on after each credit action, so that every section reads the account again.
  const [version, setVersion] = useState(0);
  const loaded = useLoad(async () => {
    const account = await call<Account>("GET", "v1/accounts/get", { query: { accountId } });
    rememberAccount(account);
    return account;
  }, [accountId]);
  const account = loaded.data;
  return (
    <main>
      <p>
        <a href="#/accounts">← Accounts</a>
      </p>
      <h1>{account ? account.externalId : "Account"}</h1>
      <Status loaded={loaded} />
      {account && (
        <>
          <dl class="facts">
            <div>
              <dt>Name</dt>
              <dd>{account.name || "–"}</dd>
            </div>
            <div>
              <dt>Email</dt>
              <dd>{account.email || "–"}</dd>
            </div>
            <div>
              <dt>Id</dt>
              <dd>
                <code>{account.id}</code>
              </dd>
            </div>
            <div>
              <dt>Stripe customer</dt>
              <dd>{account.stripeCustomerId ? <code>{account.stripeCustomerId}</code> : "–"}</dd>
            </div>
            <div>
              <dt>Created</dt>
              <dd>
                <When at={account.createdAt} />
              </dd>
            </div>
          </dl>
          <TreeSection account={account} />
          <div class="columns">
            <Balances accountId={account.id} version={version} />
            <CreditActions
              accountId={account.id}
              externalId={account.externalId}
              onDone={() => setVersion((v) => v + 1)}
            />
            <TransferAction account={account} onDone={() => setVersion((v) => v + 1)} />
          </div>
          <LimitsSection accountId={account.id} version={version} />
          <PlanSection accountId={account.id} version={version} />
          <PurchasesSection account={account} version={version} />
          <AutoTopupSection account={account} version={version} />
          <UsageSection accountId={account.id} />
          <Grants accountId={account.id} version={version} />
          <PendingReservations accountId={account.id} version={version} />
          <LedgerSection
            accountId={account.id}
            externalId={account.externalId}
            version={version}
            thread={transactionId}
            onReversed={() => setVersion((v) => v + 1)}
          />
          <ExportsSection accountId={account.id} />
        </>
      )}
    </main>
  );
}
