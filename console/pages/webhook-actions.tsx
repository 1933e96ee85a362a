/**
 * Managing webhook endpoints from the console (docs/api.md#managing-webhook-endpoints, contract
 * section 16): create one (its signing secret shown once, here, and kept nowhere), pause and
 * resume it, send it a test event, delete it behind a confirmation. Every POST carries an
 * `Idempotency-Key`, fresh for each action; only a request that got no answer at all keeps its
 * key, so that sending it again applies it at most once.
 */
import { useRef, useState } from "hono/jsx/dom";
import { ApiError, call, newIdempotencyKey } from "../api.ts";
import { ErrorMessage } from "../components.tsx";
import type { Webhook } from "../types.ts";

export interface Actions {
  busy: boolean;
  error: Error | undefined;
  notice: string;
  /**
   * POSTs `body` to `path`; on a 200, `done(answer)` gives the notice shown. An API error is
   * kept for `ErrorMessage`, which words it as a sentence (../errors.ts).
   */
  run: <T>(path: string, body: Record<string, unknown>, done: (answer: T) => string) => void;
  clear: () => void;
}

/** Runs the console's POSTs one at a time, with their error or notice for the page to show. */
export function useActions(): Actions {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<Error | undefined>(undefined);
  const [notice, setNotice] = useState("");
  // Requests (path and body) that got no answer, with the key to resend them under.
  const unanswered = useRef(new Map<string, string>());
  const run = <T,>(path: string, body: Record<string, unknown>, done: (answer: T) => string) => {
    const request = `${path} ${JSON.stringify(body)}`;
    const idempotencyKey = unanswered.current?.get(request) ?? newIdempotencyKey();
    setBusy(true);
    setError(undefined);
    setNotice("");
    call<T>("POST", path, { body, idempotencyKey }).then(
      (answer) => {
        unanswered.current?.delete(request);
        setNotice(done(answer));
        setBusy(false);
      },
      (err: unknown) => {
        if (err instanceof ApiError) {
          // A definite answer: nothing was applied, and a new attempt gets a new key.
          unanswered.current?.delete(request);
          setError(err);
        } else {
          unanswered.current?.set(request, idempotencyKey);
          setError(
            new Error(
              "No answer from the service. Do it again to resend the same request (same Idempotency-Key): it applies at most once.",
            ),
          );
        }
        setBusy(false);
      },
    );
  };
  const clear = () => {
    setError(undefined);
    setNotice("");
  };
  return { busy, error, notice, run, clear };
}

/** An action's error or notice. */
export function ActionStatus({ actions }: { actions: Actions }) {
  return (
    <>
      <ErrorMessage error={actions.error} />
      {actions.notice && (
        <p class="notice" role="status">
          {actions.notice}
        </p>
      )}
    </>
  );
}

/** The form that creates an endpoint, and the new endpoint's secret until it is dismissed. */
export function CreateWebhook({ onCreated }: { onCreated: () => void }) {
  const actions = useActions();
  const [secret, setSecret] = useState<{ url: string; secret: string } | null>(null);
  const formRef = useRef<HTMLFormElement>(null);
  const submit = (event: Event) => {
    event.preventDefault();
    const form = formRef.current;
    if (!form) return;
    const url = (form.elements.namedItem("url") as HTMLInputElement).value.trim();
    const description = (form.elements.namedItem("description") as HTMLInputElement).value;
    const body: Record<string, unknown> = { url };
    if (description.trim() !== "") body.description = description;
    setSecret(null);
    actions.run<{ webhook: Webhook & { secret: string } }>("v1/webhooks/create", body, (res) => {
      setSecret({ url: res.webhook.url, secret: res.webhook.secret });
      formRef.current?.reset();
      onCreated();
      return "Created the endpoint, receiving every event type.";
    });
  };
  return (
    <section aria-labelledby="create-webhook">
      <h2 id="create-webhook">New endpoint</h2>
      <form class="adjust" ref={formRef} onSubmit={submit}>
        <label for="webhook-url">URL</label>
        <input
          id="webhook-url"
          name="url"
          type="url"
          required
          maxlength={2048}
          autocomplete="off"
          placeholder="https://example.com/hooks/ledger"
        />
        <label for="webhook-description">Description (optional)</label>
        <input id="webhook-description" name="description" autocomplete="off" maxlength={1000} />
        <div class="buttons">
          <button type="submit" class="primary" disabled={actions.busy}>
            Create endpoint
          </button>
        </div>
      </form>
      <ActionStatus actions={actions} />
      {secret && (
        <div class="secret">
          <label for="webhook-secret">
            Signing secret of <code>{secret.url}</code>. It is shown only this once: copy it now.
          </label>
          <input id="webhook-secret" readonly value={secret.secret} autocomplete="off" />
          <button type="button" onClick={() => setSecret(null)}>
            Hide the secret
          </button>
        </div>
      )}
    </section>
  );
}

/**
 * Pause or resume, send a test event, and delete (behind a confirmation) for the endpoint
 * chosen. `onChanged` is called after each change; `onDeleted` after the delete.
 */
export function WebhookActions({
  webhook,
  actions,
  onChanged,
  onDeleted,
}: {
  webhook: Webhook;
  actions: Actions;
  onChanged: () => void;
  onDeleted: () => void;
}) {
  const [confirming, setConfirming] = useState(false);
  const webhookId = webhook.id;
  const toggle = () =>
    actions.run<{ webhook: Webhook }>(
      "v1/webhooks/update",
      { webhookId, isActive: !webhook.isActive },
      (res) => {
        onChanged();
        return res.webhook.isActive
          ? "Resumed: waiting deliveries go out now."
          : "Paused: its events wait until it is resumed.";
      },
    );
  const sendTest = () =>
    actions.run<{ eventId: string }>("v1/webhooks/test", { webhookId }, (res) => {
      onChanged();
      return `Queued a webhook.test event (${res.eventId}).`;
    });
  const remove = () =>
    actions.run<{ webhookId: string }>("v1/webhooks/delete", { webhookId }, () => {
      setConfirming(false);
      onDeleted();
      return `Deleted ${webhook.url}: nothing more is sent to it.`;
    });
  return (
    <div>
      <div class="webhook-buttons">
        <button type="button" onClick={toggle} disabled={actions.busy || confirming}>
          {webhook.isActive ? "Pause" : "Resume"}
        </button>
        <button type="button" onClick={sendTest} disabled={actions.busy || confirming}>
          Send test event
        </button>
        <button
          type="button"
          onClick={() => {
            actions.clear();
            setConfirming(true);
          }}
          disabled={actions.busy || confirming}
        >
          Delete
        </button>
      </div>
      {confirming && (
        <fieldset class="confirm">
          <legend>
            Delete the endpoint <strong>{webhook.url}</strong>? Nothing more is sent to it, and its
            pending deliveries end as failed.
          </legend>
          <button type="button" class="primary" onClick={remove} disabled={actions.busy}>
            Confirm
          </button>
          <button type="button" onClick={() => setConfirming(false)} disabled={actions.busy}>
            Cancel
          </button>
        </fieldset>
      )}
    </div>
  );
}
