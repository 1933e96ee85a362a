/**
 * Webhooks: the project's endpoints (`GET /v1/webhooks`), a form to create one, and, for the one
 * chosen, its actions (pause or resume, test event, delete; webhook-actions.tsx) and its recent
 * deliveries with their status (`GET /v1/webhooks/deliveries`), a failed one with a new attempt
 * at hand (`POST /v1/webhooks/deliveries/retry`).
 */
import { useState } from "hono/jsx/dom";
import { call } from "../api.ts";
import { Amount, Pager, Status, useLoad, When } from "../components.tsx";
import type { Delivery, Pagination, Webhook } from "../types.ts";
import {
  ActionStatus,
  type Actions,
  CreateWebhook,
  useActions,
  WebhookActions,
} from "./webhook-actions.tsx";

const PAGE = 20;

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
        <table>
          <thead>
            <tr>
              <th scope="col">Created</th>
              <th scope="col">Event</th>
              <th scope="col">Status</th>
              <th scope="col" class="num">
                Attempts
              </th>
              <th scope="col" class="num">
                Last HTTP status
              </th>
              <th scope="col">Last error</th>
              <th scope="col">Next attempt</th>
              <th scope="col">Delivered</th>
            </tr>
          </thead>
          <tbody>
            {deliveries.map((d) => (
              <tr key={d.id}>
                <td>
                  <When at={d.createdAt} />
                </td>
                <td>{d.eventType}</td>
                <td>
                  <span class={`badge ${d.status}`}>{d.status}</span>
                  {d.status === "failed" && (
                    <button
                      type="button"
                      onClick={() => retry(d.id)}
                      disabled={actions.busy}
                      aria-label={`Retry delivery ${d.id}`}
                    >
                      Retry
                    </button>
                  )}
                </td>
                <td class="num">
                  <Amount value={d.attempts} />
                </td>
                <td class="num">
                  <Amount value={d.lastStatusCode} />
                </td>
                <td>{d.lastError ?? "–"}</td>
                <td>
                  <When at={d.nextAttemptAt} />
                </td>
                <td>
                  <When at={d.deliveredAt} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
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
        <div class="scroll">
          <table aria-labelledby="endpoints">
            <thead>
              <tr>
                <th scope="col">URL</th>
                <th scope="col">Events</th>
                <th scope="col">Description</th>
                <th scope="col">Active</th>
                <th scope="col">Created</th>
                <th scope="col">
                  <span class="visually-hidden">Deliveries</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {webhooks.map((w) => (
                <tr key={w.id} class={w.id === chosen ? "chosen" : ""}>
                  <td>
                    <code>{w.url}</code>
                  </td>
                  <td>{w.events.join(", ")}</td>
                  <td>{w.description || "–"}</td>
                  <td>{w.isActive ? "yes" : "no"}</td>
                  <td>
                    <When at={w.createdAt} />
                  </td>
                  <td>
                    <button
                      type="button"
                      aria-pressed={w.id === chosen}
                      onClick={() => {
                        actions.clear();
                        setChosen(w.id);
                      }}
                      aria-label={`Deliveries of ${w.url}`}
                    >
                      Deliveries
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
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
