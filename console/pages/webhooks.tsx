/**
 * Webhooks: the project's endpoints (`GET /v1/webhooks`), a form to create one, and, for the one
 * chosen, its actions (pause or resume, test event, delete; webhook-actions.tsx) and its recent
 * deliveries with their status (`GET /v1/webhooks/deliveries`), a failed one with a new attempt
 * at hand (`POST /v1/webhooks/deliveries/retry`).
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
import type { Delivery, Pagination, Webhook } from "../types.ts";
import {
  ActionStatus,
  type Actions,
  CreateWebhook,
  useActions,
  WebhookActions,
} from "./webhook-actions.tsx";

const PAGE = 20;

/** The deliveries' columns; a failed one has its Retry button beside its status. */
function deliveryColumns(retry: (deliveryId: string) => void, busy: boolean): Column<Delivery>[] {
  return [
    { label: "Created", cell: (d) => <When at={d.createdAt} /> },
    { label: "Event", cell: (d) => <Word>{d.eventType}</Word> },
    {
      label: "Status",
      cell: (d) => (
        <span class="status">
          <span class={`badge ${d.status}`}>{d.status}</span>
          {d.status === "failed" && (
            <button
              type="button"
              onClick={() => retry(d.id)}
              disabled={busy}
              aria-label={`Retry delivery ${d.id}`}
            >
              Retry
            </button>
          )}
        </span>
      ),
    },
    { label: "Attempts", end: true, cell: (d) => <Amount value={d.attempts} /> },
    { label: "Last HTTP status", end: true, cell: (d) => <Amount value={d.lastStatusCode} /> },
    { label: "Last error", cell: (d) => d.lastError ?? "–" },
    { label: "Next attempt", cell: (d) => <When at={d.nextAttemptAt} /> },
    { label: "Delivered", cell: (d) => <When at={d.deliveredAt} /> },
  ];
}

/** The endpoints' columns; each row's button shows that endpoint's actions and deliveries. */
function endpointColumns(chosen: string | null, choose: (id: string) => void): Column<Webhook>[] {
  return [
    {
      label: "URL",
      cell: (w) => <code>{w.url}</code>,
    },
    {
      label: "Events",
      // Each event type whole; the list breaks between them.
      cell: (w) =>
        w.events.map((e, i) => (
          <span key={e}>
            {i > 0 && ", "}
            <Word>{e}</Word>
          </span>
        )),
    },
    { label: "Description", cell: (w) => w.description || "–" },
    { label: "Active", cell: (w) => <Word>{w.isActive ? "yes" : "no"}</Word> },
    { label: "Created", cell: (w) => <When at={w.createdAt} /> },
    {
      label: "Deliveries",
      hideLabel: true,
      cell: (w) => (
        <button
          type="button"
          aria-pressed={w.id === chosen}
          onClick={() => choose(w.id)}
          aria-label={`Deliveries of ${w.url}`}
        >
          Deliveries
        </button>
      ),
    },
  ];
}

function Deliveries({
  webhook,
  actions,
  round,
  onRetried,
}: {
  webhook: Webhook;
  actions: Actions;
  /** Changes when the deliveries should be loaded again. */
  round: number;
  onRetried: () => void;
}) {
  const [offset, setOffset] = useState(0);
  const loaded = useLoad(
    () =>
      call<{ deliveries: Delivery[]; pagination: Pagination }>("GET", "v1/webhooks/deliveries", {
        query: { webhookId: webhook.id, limit: PAGE, offset },
      }),
    [webhook.id, offset, round],
  );
  const deliveries = loaded.data?.deliveries ?? [];
  const retry = (deliveryId: string) =>
    actions.run<{ delivery: Delivery }>("v1/webhooks/deliveries/retry", { deliveryId }, () => {
      onRetried();
      return `Delivery ${deliveryId} is attempted once more now.`;
    });
  return (
    <div>
      <h3 id="deliveries">Recent deliveries</h3>
      <button type="button" onClick={loaded.reload} disabled={loaded.loading}>
        Refresh deliveries
      </button>
      <Status loaded={loaded} />
      {loaded.data && deliveries.length === 0 && <p class="muted">No deliveries yet.</p>}
      {deliveries.length > 0 && (
        <DataTable
          labelledBy="deliveries"
          columns={deliveryColumns(retry, actions.busy)}
          rows={deliveries}
          rowKey={(d) => d.id}
        />
      )}
      <Pager
        label="Deliveries"
        pagination={loaded.data?.pagination}
        shown={deliveries.length}
        onOffset={setOffset}
      />
    </div>
  );
}

export function WebhooksPage() {
  const loaded = useLoad(
    () => call<{ webhooks: Webhook[]; pagination?: Pagination }>("GET", "v1/webhooks"),
    [],
  );
  const [chosen, setChosen] = useState<string | null>(null);
  const [round, setRound] = useState(0);
  const actions = useActions();
  const webhooks = loaded.data?.webhooks ?? [];
  const webhook = webhooks.find((w) => w.id === chosen);
  const changed = () => {
    loaded.reload();
    setRound((r) => r + 1);
  };
  return (
    <main>
      <h1>Webhooks</h1>
      <CreateWebhook onCreated={loaded.reload} />
      <h2 id="endpoints">Endpoints</h2>
      <Status loaded={loaded} />
      {loaded.data && webhooks.length === 0 && <p class="muted">No webhook endpoints.</p>}
      {webhooks.length > 0 && (
        <DataTable
          labelledBy="endpoints"
          columns={endpointColumns(chosen, (id) => {
            actions.clear();
            setChosen(id);
          })}
          rows={webhooks}
          rowKey={(w) => w.id}
          rowClass={(w) => (w.id === chosen ? "chosen" : undefined)}
        />
      )}
      <ActionStatus actions={actions} />
      {webhook && (
        <section aria-labelledby="endpoint">
          <h2 id="endpoint">
            Endpoint <code>{webhook.url}</code>
          </h2>
          <WebhookActions
            webhook={webhook}
            actions={actions}
            onChanged={changed}
            onDeleted={() => {
              setChosen(null);
              loaded.reload();
            }}
          />
          <Deliveries
            webhook={webhook}
            actions={actions}
            round={round}
            onRetried={() => setRound((r) => r + 1)}
          />
        </section>
      )}
    </main>
  );
}
