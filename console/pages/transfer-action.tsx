/**
 * Transferring credits from this account to another (`POST /v1/accounts/transfer`,
 * docs/api.md#transfers), behind a confirmation like the credit actions (credit-actions.tsx).
 * The destination (its `externalId` or id) is read first, so that the confirmation names the
 * account the credits go to; nothing is sent before `Confirm`. The amount goes out as the
 * literal typed; each confirmation carries its own fresh `Idempotency-Key`, kept only while a
 * request got no answer, so that confirming it again applies it at most once.
 *
 * Both accounts must fund themselves: a member funded by its parent is offered no transfer (its
 * pool holds its credits), and the API refuses one to a member (`FUNDED_BY_PARENT`).
 */
import { useRef, useState } from "hono/jsx/dom";
import { amountLiteral, call, newIdempotencyKey, writeFailure } from "../api.ts";
import { Amount, Confirmation, ErrorMessage } from "../components.tsx";
import type { Account, TransferAnswer } from "../types.ts";
import { AccountLink, rememberAccount } from "./account-links.tsx";
import { fundedByPool } from "./account-tree.tsx";

interface Pending {
  /** The destination, as read. */
  to: Account;
  amount: string;
  description: string;
  idempotencyKey: string;
}

/** What the last confirmed transfer did, for its notice. */
interface Done {
  to: Account;
  answer: TransferAnswer;
}

function TransferForm({ account, onDone }: { account: Account; onDone: () => void }) {
  const [pending, setPending] = useState<Pending | null>(null);
  const [error, setError] = useState<Error | undefined>(undefined);
  const [notice, setNotice] = useState<Done | null>(null);
  const [busy, setBusy] = useState(false);
  const formRef = useRef<HTMLFormElement>(null);

  const ask = async (event: Event) => {
    event.preventDefault();
    const form = event.target as HTMLFormElement;
    const value = (name: string) => (form.elements.namedItem(name) as HTMLInputElement).value;
    const destination = value("destination").trim();
    const amount = value("amount").trim();
    const description = value("description");
    setNotice(null);
    if (destination === "") {
      setError(new Error("Enter the destination account's externalId or id."));
      return;
    }
    if (amountLiteral(amount) === null) {
      setError(new Error("Enter an amount such as 10 or 0.25"));
      return;
    }
    setBusy(true);
    try {
      const to = await call<Account>("GET", "v1/accounts/get", {
        query: { accountId: destination },
      });
      rememberAccount(to);
      if (to.id === account.id) {
        setError(new Error("Choose another account: a transfer moves credits to another one."));
        return;
      }
      setError(undefined);
      setPending({ to, amount, description, idempotencyKey: newIdempotencyKey() });
    } catch (err) {
      setError(err instanceof Error ? err : new Error(String(err)));
    } finally {
      setBusy(false);
    }
  };

  const confirm = async () => {
    if (!pending) return;
    setBusy(true);
    try {
      const body: Record<string, unknown> = {
        fromAccountId: account.id,
        toAccountId: pending.to.id,
        amount: amountLiteral(pending.amount),
      };
      if (pending.description.trim() !== "") body.description = pending.description;
      const answer = await call<TransferAnswer>("POST", "v1/accounts/transfer", {
        body,
        idempotencyKey: pending.idempotencyKey,
      });
      setNotice({ to: pending.to, answer });
      setPending(null);
      setError(undefined);
      formRef.current?.reset();
      onDone();
    } catch (err) {
      const failure = writeFailure(err);
      if (failure.definite) setPending(null);
      setError(failure.error);
    } finally {
      setBusy(false);
    }
  };

  const locked = pending !== null || busy;
  return (
    <>
      <form class="adjust" ref={formRef} onSubmit={ask}>
        <label for="transfer-to">To account (externalId or id)</label>
        <input
          id="transfer-to"
          name="destination"
          autocomplete="off"
          maxlength={255}
          disabled={locked}
        />
        <label for="transfer-amount">Amount (credits)</label>
        <input
          id="transfer-amount"
          name="amount"
          inputmode="decimal"
          autocomplete="off"
          disabled={locked}
        />
        <label for="transfer-description">Description (optional)</label>
        <input
          id="transfer-description"
          name="description"
          autocomplete="off"
          maxlength={1000}
          disabled={locked}
        />
        <div class="buttons">
          <button type="submit" disabled={locked}>
            Transfer
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
          Transfer{" "}
          <strong>
            <Amount value={pending.amount} />
          </strong>{" "}
          credits from <strong>{account.externalId}</strong> to{" "}
          <strong>{pending.to.externalId}</strong>?
        </Confirmation>
      )}
      <ErrorMessage error={error} />
      {notice && (
        <p class="notice" role="status">
          Transferred <Amount value={notice.answer.debit.amount} /> credits to{" "}
          <AccountLink id={notice.to.id} /> (transfer <code>{notice.answer.transferId}</code>).
          Balance of {account.externalId}: <Amount value={notice.answer.fromBalance} />; of{" "}
          {notice.to.externalId}: <Amount value={notice.answer.toBalance} />.
        </p>
      )}
    </>
  );
}

/** The "Transfer credits" section: the form, or why a member has none. */
export function TransferAction({ account, onDone }: { account: Account; onDone: () => void }) {
  return (
    <section aria-labelledby="transfer">
      <h2 id="transfer">Transfer credits</h2>
      {fundedByPool(account) ? (
        <p class="muted">
          No transfer from or to this account: its pool <AccountLink id={account.fundedBy} /> holds
          its credits. Transfer from or to the pool instead.
        </p>
      ) : (
        <TransferForm account={account} onDone={onDone} />
      )}
    </section>
  );
}
