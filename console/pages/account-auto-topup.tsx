/**
 * An account's automatic top-up (`GET|POST /v1/accounts/auto-topup`, contract section 26;
 * docs/api.md#automatic-top-up): its settings (on or off, threshold, amount, monthly limit, the
 * credits topped up this UTC month, the failures in a row and why it turned itself off), a form
 * that changes them behind a confirmation, and its attempts
 * (`GET /v1/accounts/auto-topup/attempts`), newest first, 20 to a page: status, why one failed
 * (in words where the console knows the reason), credits, the USD charged and the PaymentIntent.
 *
 * Amounts go out as the literals typed; each confirmation carries its own fresh
 * `Idempotency-Key`, kept only while a request got no answer (credit-actions.tsx). A member
 * funded by its parent has no top-up of its own: its pool buys its credits, so only a note is
 * shown.
 */
import { useState } from "hono/jsx/dom";
import { amountLiteral, call, type Num, newIdempotencyKey, writeFailure } from "../api.ts";
import {
  Amount,
  type Column,
  Confirmation,
  DataTable,
  ErrorMessage,
  Pager,
  Status,
  useLoad,
  When,
} from "../components.tsx";
import type { Account, AutoTopup, AutoTopupAttempt, Pagination } from "../types.ts";
import { AccountLink } from "./account-links.tsx";
import { stripeMoney } from "./account-purchases.tsx";
import { fundedByPool } from "./account-tree.tsx";

const PAGE = 20;

/**
 * The reasons of a failed attempt the console puts in words: the ledger's own and Stripe's
 * usual decline and error codes (docs.stripe.com/declines/codes). Any other is shown as its code.
 */
const REASONS: Readonly<Record<string, string>> = {
  monthly_limit: "monthly limit reached",
  no_payment_method: "no default payment method",
  not_configured: "Stripe not set up",
  unreachable: "Stripe did not answer",
  requires_action: "needs the customer's action",
  canceled: "payment canceled",
  authentication_required: "authentication required",
  card_declined: "card declined",
  generic_decline: "card declined",
  do_not_honor: "card declined by the bank",
  insufficient_funds: "insufficient funds",
  expired_card: "card expired",
  incorrect_cvc: "wrong security code",
  lost_card: "card reported lost",
  stolen_card: "card reported stolen",
  fraudulent: "declined as fraudulent",
  card_velocity_exceeded: "card's spending limit reached",
  processing_error: "card processing error",
};

/** Why a top-up turned itself off, in words. */
const DISABLED_BECAUSE: Record<NonNullable<AutoTopup["disabledReason"]>, string> = {
  consecutive_failures:
    "It turned itself off after 3 failed attempts in a row. Turning it on again resets the count.",
};

/** A failed attempt's reason: in words where known (its code as the title), else its code. */
function Reason({ reason }: { reason: string | null }) {
  if (reason === null) return <span class="muted">–</span>;
  const words = REASONS[reason];
  return words ? <span title={reason}>{words}</span> : <code>{reason}</code>;
}

const STATUS_TONE: Record<AutoTopupAttempt["status"], string> = {
  pending: "badge",
  succeeded: "badge active",
  failed: "badge failed",
};

const attemptColumns: Column<AutoTopupAttempt>[] = [
  { label: "Created", cell: (a) => <When at={a.createdAt} /> },
  { label: "Status", cell: (a) => <span class={STATUS_TONE[a.status]}>{a.status}</span> },
  { label: "Reason", cell: (a) => <Reason reason={a.reason} /> },
  { label: "Credits", end: true, cell: (a) => <Amount value={a.credits} /> },
  {
    label: "Amount",
    end: true,
    cell: (a) => <span class="num">{stripeMoney(a.amountCents, "usd")}</span>,
  },
  {
    label: "PaymentIntent",
    cell: (a) => (a.paymentIntentId ? <code>{a.paymentIntentId}</code> : "–"),
  },
  { label: "Finished", cell: (a) => <When at={a.finishedAt} /> },
];

function Settings({ settings }: { settings: AutoTopup }) {
  const fact = (label: string, value: Num | null, none = "–") => (
    <div>
      <dt>{label}</dt>
      <dd>{value === null ? none : <Amount value={value} />}</dd>
    </div>
  );
  return (
    <>
      <dl class="facts">
        <div>
          <dt>Status</dt>
          <dd>
            <span class={settings.enabled ? "badge active" : "badge archived"}>
              {settings.enabled ? "on" : "off"}
            </span>
          </dd>
        </div>
        {fact("Threshold", settings.threshold)}
        {fact("Amount", settings.amount)}
        {fact("Monthly limit", settings.monthlyLimit, "none")}
        {fact("Topped up this month", settings.toppedUpThisMonth)}
        {fact("Failures in a row", settings.consecutiveFailures)}
      </dl>
      {settings.disabledReason && (
        <p class="muted" data-reason={settings.disabledReason}>
          {DISABLED_BECAUSE[settings.disabledReason]}
        </p>
      )}
    </>
  );
}

function Attempts({ accountId, version }: { accountId: string; version: number }) {
  const [offset, setOffset] = useState(0);
  const loaded = useLoad(
    () =>
      call<{ attempts: AutoTopupAttempt[]; pagination: Pagination }>(
        "GET",
        "v1/accounts/auto-topup/attempts",
        { query: { accountId, limit: PAGE, offset } },
      ),
    [accountId, offset, version],
  );
  const attempts = loaded.data?.attempts ?? [];
  return (
    <>
      <h3 id="auto-topup-attempts">Attempts</h3>
      <Status loaded={loaded} />
      {loaded.data && attempts.length === 0 && <p class="muted">No attempts.</p>}
      {attempts.length > 0 && (
        <DataTable
          label="Top-up attempts"
          columns={attemptColumns}
          rows={attempts}
          rowKey={(a) => a.id}
        />
      )}
      <Pager
        label="Top-up attempts"
        pagination={loaded.data?.pagination}
        shown={attempts.length}
        onOffset={setOffset}
      />
    </>
  );
}

/** The settings asked for, as typed, until confirmed or cancelled. */
interface Pending {
  enabled: boolean;
  threshold: string;
  amount: string;
  /** "" for none. */
  monthlyLimit: string;
  idempotencyKey: string;
}

/** What the form holds, or the sentence saying what to fix. */
function readForm(form: HTMLFormElement): Omit<Pending, "idempotencyKey"> | Error {
  const input = (name: string) => form.elements.namedItem(name) as HTMLInputElement;
  const threshold = input("threshold").value.trim();
  const amount = input("amount").value.trim();
  const monthlyLimit = input("monthlyLimit").value.trim();
  if (amountLiteral(threshold) === null) {
    return new Error("Enter a threshold in credits, such as 50 (0 is allowed).");
  }
  if (amountLiteral(amount) === null) return new Error("Enter an amount in credits, such as 500.");
  if (monthlyLimit !== "" && amountLiteral(monthlyLimit) === null) {
    return new Error("Enter a monthly limit in credits, such as 2000, or leave it empty for none.");
  }
  return { enabled: input("enabled").checked, threshold, amount, monthlyLimit };
}

/** The confirmation's question: what the top-up will do once saved. */
function Question({
  pending,
  externalId,
  wasOn,
}: {
  pending: Pending;
  externalId: string;
  /** Whether the top-up is on already. */
  wasOn: boolean;
}) {
  const limit =
    pending.monthlyLimit === "" ? (
      "with no monthly limit"
    ) : (
      <>
        at most <Amount value={pending.monthlyLimit} /> credits a month (UTC)
      </>
    );
  if (!pending.enabled) {
    return (
      <>
        Turn off the automatic top-up of <strong>{externalId}</strong>? Its threshold (
        <Amount value={pending.threshold} />
        ), amount (<Amount value={pending.amount} />) and monthly limit (
        {pending.monthlyLimit === "" ? "none" : <Amount value={pending.monthlyLimit} />}) are kept.
      </>
    );
  }
  return (
    <>
      {wasOn ? "Keep" : "Turn on"} the automatic top-up of <strong>{externalId}</strong>
      {wasOn ? " on" : ""}: buy{" "}
      <strong>
        <Amount value={pending.amount} />
      </strong>{" "}
      credits whenever its available credits fall below{" "}
      <strong>
        <Amount value={pending.threshold} />
      </strong>
      , {limit}?
    </>
  );
}

/** The notice of a saved change: on or off, and the attempt it queued at once, if any. */
function notice(saved: AutoTopup, before: AutoTopup | null): string {
  const state = `Saved: the automatic top-up is ${saved.enabled ? "on" : "off"}.`;
  const last = saved.lastAttempt;
  if (!last || last.id === before?.lastAttempt?.id) return state;
  const what = `${String(last.credits)} credits`;
  if (last.status === "failed") {
    const why = last.reason ? (REASONS[last.reason] ?? last.reason) : "no reason given";
    return `${state} Its available credits were below the threshold: an attempt to buy ${what} failed at once (${why}).`;
  }
  return `${state} Its available credits were below the threshold: an attempt to buy ${what} was queued.`;
}

function SettingsForm({
  account,
  settings,
  onSaved,
}: {
  account: Account;
  settings: AutoTopup | null;
  onSaved: () => void;
}) {
  const [pending, setPending] = useState<Pending | null>(null);
  const [error, setError] = useState<Error | undefined>(undefined);
  const [done, setDone] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const ask = (event: Event) => {
    event.preventDefault();
    setDone(null);
    const read = readForm(event.target as HTMLFormElement);
    if (read instanceof Error) {
      setError(read);
      return;
    }
    setError(undefined);
    setPending({ ...read, idempotencyKey: newIdempotencyKey() });
  };

  const confirm = async () => {
    if (!pending) return;
    setBusy(true);
    try {
      const answer = await call<{ autoTopup: AutoTopup }>("POST", "v1/accounts/auto-topup", {
        body: {
          accountId: account.id,
          enabled: pending.enabled,
          threshold: amountLiteral(pending.threshold),
          amount: amountLiteral(pending.amount),
          monthlyLimit: pending.monthlyLimit === "" ? null : amountLiteral(pending.monthlyLimit),
        },
        idempotencyKey: pending.idempotencyKey,
      });
      setDone(notice(answer.autoTopup, settings));
      setPending(null);
      setError(undefined);
      onSaved();
    } catch (err) {
      const failure = writeFailure(err);
      if (failure.definite) setPending(null);
      setError(failure.error);
    } finally {
      setBusy(false);
    }
  };

  const locked = pending !== null || busy;
  // Filled with the settings as read; a new reading fills it again.
  const formKey = settings
    ? [settings.enabled, settings.threshold, settings.amount, settings.monthlyLimit].join(" ")
    : "none";
  return (
    <>
      <h3 id="auto-topup-change">{settings ? "Change" : "Set up"}</h3>
      <form class="adjust" key={formKey} onSubmit={ask} aria-labelledby="auto-topup-change">
        <label for="auto-topup-enabled">On</label>
        {/* In a span, so that the grid's cell holds it at its start. */}
        <span>
          <input
            id="auto-topup-enabled"
            name="enabled"
            type="checkbox"
            checked={settings ? settings.enabled : true}
            disabled={locked}
          />
        </span>
        <label for="auto-topup-threshold">Threshold (credits)</label>
        <input
          id="auto-topup-threshold"
          name="threshold"
          inputmode="decimal"
          autocomplete="off"
          value={settings ? String(settings.threshold) : ""}
          disabled={locked}
        />
        <label for="auto-topup-amount">Amount (credits)</label>
        <input
          id="auto-topup-amount"
          name="amount"
          inputmode="decimal"
          autocomplete="off"
          value={settings ? String(settings.amount) : ""}
          disabled={locked}
        />
        <label for="auto-topup-limit">Monthly limit (credits, optional)</label>
        <input
          id="auto-topup-limit"
          name="monthlyLimit"
          inputmode="decimal"
          autocomplete="off"
          value={settings?.monthlyLimit ? String(settings.monthlyLimit) : ""}
          disabled={locked}
        />
        <div class="buttons">
          <button type="submit" disabled={locked}>
            Save
          </button>
        </div>
      </form>
      {pending && (
        <Confirmation
          busy={busy}
          onConfirm={confirm}
          onCancel={() => {
            setPending(null);
            setError(undefined);
          }}
        >
          <Question
            pending={pending}
            externalId={account.externalId}
            wasOn={settings?.enabled === true}
          />
        </Confirmation>
      )}
      <ErrorMessage error={error} />
      {done && (
        <p class="notice" role="status">
          {done}
        </p>
      )}
    </>
  );
}

function OwnTopUp({ account, version }: { account: Account; version: number }) {
  // Moves on after each saved change, so that the settings and the attempts are read again.
  const [saved, setSaved] = useState(0);
  const loaded = useLoad(
    () =>
      call<{ autoTopup: AutoTopup | null }>("GET", "v1/accounts/auto-topup", {
        query: { accountId: account.id },
      }),
    [account.id, version, saved],
  );
  const settings = loaded.data?.autoTopup;
  return (
    <>
      <Status loaded={loaded} />
      {settings === null && <p class="muted">No automatic top-up set.</p>}
      {settings && <Settings settings={settings} />}
      {settings !== undefined && (
        <SettingsForm
          account={account}
          settings={settings}
          onSaved={() => setSaved((s) => s + 1)}
        />
      )}
      <Attempts accountId={account.id} version={version + saved} />
    </>
  );
}

/** The "Automatic top-up" section: the account's own, or a note naming the pool that buys. */
export function AutoTopupSection({ account, version }: { account: Account; version: number }) {
  return (
    <section aria-labelledby="auto-topup">
      <h2 id="auto-topup">Automatic top-up</h2>
      {fundedByPool(account) ? (
        <p class="muted">
          No automatic top-up of its own: its pool <AccountLink id={account.fundedBy} /> buys its
          credits. Set one on the pool instead.
        </p>
      ) : (
        <OwnTopUp account={account} version={version} />
      )}
    </section>
  );
}
