/**
 * Add credits and deduct credits (`POST /v1/accounts/credits/add|deduct`), each behind a
 * confirmation. The amount goes out as the literal typed; each confirmed action carries its own
 * fresh `Idempotency-Key`, made when the confirmation opens, so a second click or a retry after
 * a lost answer applies it at most once.
 */
import { useRef, useState } from "hono/jsx/dom";
import { amountLiteral, call, type Num, newIdempotencyKey, writeFailure } from "../api.ts";
import { Amount, Confirmation, ErrorMessage } from "../components.tsx";

type Kind = "add" | "deduct";

interface Pending {
  kind: Kind;
  amount: string;
  description: string;
  idempotencyKey: string;
}

interface Result {
  balance: Num;
  transactionId: string;
}

/** What the last confirmed action did, for its notice. */
interface Done extends Result {
  kind: Kind;
  amount: string;
}

const VERB: Record<Kind, { label: string; done: string; path: string }> = {
  add: { label: "Add credits", done: "Added", path: "v1/accounts/credits/add" },
  deduct: { label: "Deduct credits", done: "Deducted", path: "v1/accounts/credits/deduct" },
};

export function CreditActions({
  accountId,
  externalId,
  onDone,
}: {
  accountId: string;
  externalId: string;
  onDone: () => void;
}) {
  const [pending, setPending] = useState<Pending | null>(null);
  const [error, setError] = useState<Error | undefined>(undefined);
  const [notice, setNotice] = useState<Done | null>(null);
  const [busy, setBusy] = useState(false);
  const formRef = useRef<HTMLFormElement>(null);

  const ask = (kind: Kind) => (event: Event) => {
    const form = (event.target as HTMLButtonElement).form;
    if (!form) return;
    const amount = (form.elements.namedItem("amount") as HTMLInputElement).value.trim();
    const description = (form.elements.namedItem("description") as HTMLInputElement).value;
    setNotice(null);
    if (amountLiteral(amount) === null) {
      setError(new Error("Enter an amount such as 10 or 0.25"));
      return;
    }
    setError(undefined);
    setPending({ kind, amount, description, idempotencyKey: newIdempotencyKey() });
  };

  const confirm = async () => {
    if (!pending) return;
    setBusy(true);
    try {
      const body: Record<string, unknown> = { accountId, amount: amountLiteral(pending.amount) };
      if (pending.description.trim() !== "") body.description = pending.description;
      const res = await call<Result>("POST", VERB[pending.kind].path, {
        body,
        idempotencyKey: pending.idempotencyKey,
      });
      setNotice({ kind: pending.kind, amount: pending.amount, ...res });
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

  return (
    <section aria-labelledby="adjust">
      <h2 id="adjust">Adjust credits</h2>
      <form class="adjust" ref={formRef} onSubmit={(e: Event) => e.preventDefault()}>
        <label for="adjust-amount">Amount (credits)</label>
        <input
          id="adjust-amount"
          name="amount"
          inputmode="decimal"
          autocomplete="off"
          disabled={pending !== null}
        />
        <label for="adjust-description">Description (optional)</label>
        <input
          id="adjust-description"
          name="description"
          autocomplete="off"
          maxlength={1000}
          disabled={pending !== null}
        />
        <div class="buttons">
          <button type="button" onClick={ask("add")} disabled={pending !== null}>
            Add credits
          </button>
          <button type="button" onClick={ask("deduct")} disabled={pending !== null}>
            Deduct credits
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
          {pending.kind === "add" ? "Add" : "Deduct"}{" "}
          <strong>
            <Amount value={pending.amount} />
          </strong>{" "}
          credits {pending.kind === "add" ? "to" : "from"} <strong>{externalId}</strong>?
        </Confirmation>
      )}
      <ErrorMessage error={error} />
      {notice && (
        <p class="notice" role="status">
          {VERB[notice.kind].done} <Amount value={notice.amount} /> credits. Balance:{" "}
          <Amount value={notice.balance} /> (transaction <code>{notice.transactionId}</code>).
        </p>
      )}
    </section>
  );
}
