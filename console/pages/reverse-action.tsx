/**
 * Reversing a ledger entry (`POST /v1/transactions/reverse`, docs/api.md#reversals) from the
 * account's ledger: the "Reverse" of a row opens this confirmation, its amount prefilled with
 * what is left of the entry to reverse (../reversals.ts); nothing is sent before `Confirm`.
 *
 * The amount goes out as the literal typed. Each request carries a fresh `Idempotency-Key`;
 * only a request that got no answer at all keeps its key, so that confirming it again applies it
 * at most once. A refusal for the amount (`REVERSAL_EXCEEDS_ORIGINAL`,
 * `REVERSAL_EXCEEDS_REMAINING`: a credit is capped by what is left of its grant and by the
 * account's available credits) shows the API's `details.reversible` and offers to retry with it.
 */
import { useEffect, useRef, useState } from "hono/jsx/dom";
import { ApiError, amountLiteral, call, newIdempotencyKey } from "../api.ts";
import { Amount, ErrorMessage, When } from "../components.tsx";
import { grouped } from "../format.ts";
import { isPositive, reversibleOf } from "../reversals.ts";
import type { ReverseAnswer, Transaction } from "../types.ts";

export function ReversePanel({
  transaction,
  left,
  externalId,
  onDone,
  onCancel,
}: {
  /** The entry to reverse. */
  transaction: Transaction;
  /** The amount prefilled: the entry's amount less its reversals so far. */
  left: string;
  externalId: string;
  onDone: (answer: ReverseAnswer) => void;
  onCancel: () => void;
}) {
  const [amount, setAmount] = useState(left);
  const [description, setDescription] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<Error | undefined>(undefined);
  /** `details.reversible` of the last refusal for the amount. */
  const [offer, setOffer] = useState<string | undefined>(undefined);
  // Requests that got no answer, with the key to resend them under.
  const unanswered = useRef(new Map<string, string>());
  const amountField = useRef<HTMLInputElement>(null);
  const panel = useRef<HTMLFieldSetElement>(null);

  // Another entry chosen: its own amount, and the operator's attention on it.
  useEffect(() => {
    setAmount(left);
    setDescription("");
    setError(undefined);
    setOffer(undefined);
    panel.current?.scrollIntoView({ block: "nearest" });
    amountField.current?.focus({ preventScroll: true });
  }, [transaction.id]);

  const send = async (typed: string) => {
    const literal = amountLiteral(typed);
    setOffer(undefined);
    if (literal === null) {
      setError(new Error("Enter an amount such as 10 or 0.25"));
      return;
    }
    const body: Record<string, unknown> = { transactionId: transaction.id, amount: literal };
    if (description.trim() !== "") body.description = description;
    const request = JSON.stringify([transaction.id, literal.value, description]);
    const idempotencyKey = unanswered.current?.get(request) ?? newIdempotencyKey();
    setBusy(true);
    setError(undefined);
    try {
      const answer = await call<ReverseAnswer>("POST", "v1/transactions/reverse", {
        body,
        idempotencyKey,
      });
      unanswered.current?.delete(request);
      onDone(answer);
    } catch (err) {
      if (err instanceof ApiError) {
        // A definite answer: nothing was applied, and a new attempt gets a new key.
        unanswered.current?.delete(request);
        setError(err);
        setOffer(reversibleOf(err.details));
      } else {
        unanswered.current?.set(request, idempotencyKey);
        setError(
          new Error(
            "No answer from the service. Confirm again to resend the same request (same Idempotency-Key): it applies at most once.",
          ),
        );
      }
    } finally {
      setBusy(false);
    }
  };

  const submit = (event: Event) => {
    event.preventDefault();
    void send(amount.trim());
  };

  const debit = transaction.type === "debit";
  return (
    <fieldset class="confirm reverse" ref={panel}>
      <legend>
        Reverse the {transaction.type} <code>{transaction.id}</code> of{" "}
        <strong>
          <Amount value={transaction.amount} />
        </strong>{" "}
        credits (<When at={transaction.createdAt} />
        )?
      </legend>
      <p class="muted">
        {debit
          ? `Its credits go back to ${externalId}, to the grants it drew from.`
          : `Its credits are taken back from ${externalId}: at most what is left of its grant and what is available.`}{" "}
        Reversed so far: <Amount value={transaction.amountReversed ?? 0} />.
      </p>
      <form class="adjust" onSubmit={submit}>
        <label for="reverse-amount">Amount to reverse (credits)</label>
        <input
          id="reverse-amount"
          name="amount"
          ref={amountField}
          inputmode="decimal"
          autocomplete="off"
          value={amount}
          onInput={(e: Event) => setAmount((e.target as HTMLInputElement).value)}
          disabled={busy}
        />
        <label for="reverse-description">Description (optional)</label>
        <input
          id="reverse-description"
          name="description"
          autocomplete="off"
          maxlength={1000}
          value={description}
          onInput={(e: Event) => setDescription((e.target as HTMLInputElement).value)}
          disabled={busy}
        />
        <div class="buttons">
          <button type="submit" class="primary" disabled={busy}>
            Confirm
          </button>
          <button type="button" onClick={onCancel} disabled={busy}>
            Cancel
          </button>
        </div>
      </form>
      <ErrorMessage error={error} />
      {offer !== undefined &&
        (isPositive(offer) ? (
          <p class="retry">
            <span>
              At most <Amount value={offer} /> credits of it can be reversed now.
            </span>{" "}
            <button
              type="button"
              disabled={busy}
              onClick={() => {
                setAmount(offer);
                void send(offer);
              }}
            >
              Retry with {grouped(offer)}
            </button>
          </p>
        ) : (
          <p class="muted">Nothing of it can be reversed now.</p>
        ))}
    </fieldset>
  );
}
