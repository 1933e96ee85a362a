/**
 * The account's purchases through Stripe (`GET /v1/purchases`, contract section 25;
 * docs/api.md#selling-credits-through-stripe): newest first, 20 to a page, each with the credits
 * it granted, what was paid and refunded (in the payment's currency), the credits its refunds
 * and disputes took back and those they could not (already spent or held), its status, its
 * PaymentIntent and a link to its credit's thread in the ledger (the credit and its reversals,
 * account-ledger.tsx). A member's purchases grant their credits to its pool, so their credits
 * are in the pool's ledger.
 *
 * Stripe gives amounts as integers in the currency's smallest unit; they are shown in the
 * currency's unit, on the exact digits, never through a double.
 */
import { useState } from "hono/jsx/dom";
import { call, type Num } from "../api.ts";
import { Amount, type Column, DataTable, Pager, Status, useLoad, When } from "../components.tsx";
import { grouped } from "../format.ts";
import type { Account, Pagination, Purchase } from "../types.ts";
import { ledgerHref } from "./account-ledger.tsx";
import { AccountLink } from "./account-links.tsx";
import { fundedByPool } from "./account-tree.tsx";

const PAGE = 20;

/**
 * Stripe's currencies whose smallest unit is the unit itself (docs.stripe.com/currencies:
 * `2500` jpy is ¥2,500), and those with three decimals. Every other currency has two in Stripe's
 * API, ISK included (which ISO and the browser's Intl give none).
 */
const ZERO_DECIMAL: ReadonlySet<string> = new Set([
  "bif",
  "clp",
  "djf",
  "gnf",
  "jpy",
  "kmf",
  "krw",
  "mga",
  "pyg",
  "rwf",
  "ugx",
  "vnd",
  "vuv",
  "xaf",
  "xof",
  "xpf",
]);
const THREE_DECIMAL: ReadonlySet<string> = new Set(["bhd", "jod", "kwd", "omr", "tnd"]);

/** The decimals of `currency` (lower case) in Stripe's amounts. */
export function stripeDecimals(currency: string): number {
  if (ZERO_DECIMAL.has(currency)) return 0;
  return THREE_DECIMAL.has(currency) ? 3 : 2;
}

const symbols = new Map<string, string>();

/**
 * The currency's sign (`$`, `€`, `¥`) as the browser knows it, or "" when it has none without
 * letters (`CHF`, `lei`): the upper-case code beside the amount names the currency anyway.
 */
function symbolOf(code: string): string {
  const known = symbols.get(code);
  if (known !== undefined) return known;
  let symbol = "";
  try {
    const parts = new Intl.NumberFormat("en-US", {
      style: "currency",
      currency: code,
      currencyDisplay: "narrowSymbol",
    }).formatToParts(0);
    const sign = parts.find((p) => p.type === "currency")?.value ?? "";
    if (!/\p{L}/u.test(sign)) symbol = sign;
  } catch {
    // Not a currency code the browser accepts: the code alone.
  }
  symbols.set(code, symbol);
  return symbol;
}

/**
 * A Stripe amount in `currency`'s smallest unit as a person reads it: `2500` usd →
 * `$25.00 USD`, `2500` jpy → `¥2,500 JPY`, `12340` kwd → `12.340 KWD`. Worked on the literal's
 * digits; a literal that is not a whole number of units is shown as written, with the code.
 */
export function stripeMoney(amount: Num | number | string, currency: string): string {
  const code = currency.toUpperCase();
  const literal = String(amount);
  if (!/^\d+$/.test(literal)) return `${literal} ${code}`;
  const decimals = stripeDecimals(currency.toLowerCase());
  const digits = literal.padStart(decimals + 1, "0");
  const whole = digits.slice(0, digits.length - decimals);
  const fraction = decimals === 0 ? "" : `.${digits.slice(-decimals)}`;
  return `${symbolOf(code)}${grouped(whole)}${fraction} ${code}`;
}

/** An amount of the purchase's currency, on one line. */
function Money({ value, currency }: { value: Num; currency: string }) {
  return <span class="num">{stripeMoney(value, currency)}</span>;
}

/** The badge's look of each status: the console's green, neutral, muted and red. */
const STATUS_TONE: Record<Purchase["status"], string> = {
  paid: "active",
  partially_refunded: "",
  refunded: "archived",
  disputed: "failed",
};

function PurchaseStatus({ status }: { status: Purchase["status"] }) {
  const tone = STATUS_TONE[status] ?? "";
  return <span class={tone ? `badge ${tone}` : "badge"}>{status.replace(/_/g, " ")}</span>;
}

/** The table's columns; `ledgerOf`: the account whose ledger holds the purchases' credits. */
function purchaseColumns(ledgerOf: string): Column<Purchase>[] {
  return [
    { label: "Date", cell: (p) => <When at={p.createdAt} /> },
    { label: "Credits", end: true, cell: (p) => <Amount value={p.credits} /> },
    { label: "Paid", end: true, cell: (p) => <Money value={p.amountPaid} currency={p.currency} /> },
    {
      label: "Refunded",
      end: true,
      cell: (p) => <Money value={p.amountRefunded} currency={p.currency} />,
    },
    { label: "Clawed back", end: true, cell: (p) => <Amount value={p.creditsClawedBack} /> },
    { label: "Uncollected", end: true, cell: (p) => <Amount value={p.creditsUncollected} /> },
    { label: "Status", cell: (p) => <PurchaseStatus status={p.status} /> },
    {
      label: "Payment",
      cell: (p) => <code title="Stripe PaymentIntent">{p.paymentIntentId}</code>,
    },
    {
      label: "Credit",
      cell: (p) => (
        <a
          href={ledgerHref(ledgerOf, p.transactionId)}
          aria-label={`Credit of ${p.paymentIntentId} in the ledger`}
        >
          <code>{p.transactionId}</code>
        </a>
      ),
    },
  ];
}

export function PurchasesSection({ account, version }: { account: Account; version: number }) {
  const [offset, setOffset] = useState(0);
  const loaded = useLoad(
    () =>
      call<{ purchases: Purchase[]; pagination: Pagination }>("GET", "v1/purchases", {
        query: { accountId: account.id, limit: PAGE, offset },
      }),
    [account.id, offset, version],
  );
  const purchases = loaded.data?.purchases ?? [];
  const member = fundedByPool(account);
  return (
    <section aria-labelledby="purchases">
      <h2 id="purchases">Purchases</h2>
      <Status loaded={loaded} />
      {loaded.data && purchases.length === 0 && <p class="muted">No purchases through Stripe.</p>}
      {purchases.length > 0 && member && (
        <p class="muted">
          A member's purchases grant their credits to its pool,{" "}
          <AccountLink id={account.fundedBy} />, whose ledger the links open.
        </p>
      )}
      {purchases.length > 0 && (
        <DataTable
          label="Purchases"
          columns={purchaseColumns(account.fundedBy)}
          rows={purchases}
          rowKey={(p) => p.id}
        />
      )}
      <Pager
        label="Purchases"
        pagination={loaded.data?.pagination}
        shown={purchases.length}
        onOffset={setOffset}
      />
    </section>
  );
}
