/**
 * Webhooks: the project's endpoints (`GET /v1/webhooks`) and, for the one chosen, its recent
 * deliveries with their status (`GET /v1/webhooks/deliveries`).
 */
import { useState } from "hono/jsx/dom";
import { call } from "../api.ts";
import { Amount, Pager, Status, useLoad, When } from "../components.tsx";
import type { Delivery, Pagination, Webhook } from "../types.ts";

const PAGE = 20;

function Deliveries({ webhook }: { webhook: Webhook }) {
  const [offset, setOffset] = useState(0);
  const loaded = useLoad(
    () =>
      call<{ deliveries: Delivery[]; pagination: Pagination }>("GET", "v1/webhooks/deliveries", {
        query: { webhookId: webhook.id, limit: PAGE, offset },
      }),
    [webhook.id, offset],
  );
  const deliveries = loaded.data?.deliveries ?? [];
  return (
    <section aria-labelledby="deliveries">
      <h2 id="deliveries">Recent deliveries to {webhook.url}</h2>
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
    </section>
  );
}

export function WebhooksPage() {
  const loaded = useLoad(
    () => call<{ webhooks: Webhook[]; pagination?: Pagination }>("GET", "v1/webhooks"),
    [],
  );
  const [chosen, setChosen] = useState<string | null>(null);
  const webhooks = loaded.data?.webhooks ?? [];
  const webhook = webhooks.find((w) => w.id === chosen);
  return (
    <main>
      <h1>Webhooks</h1>
      <Status loaded={loaded} />
      {loaded.data && webhooks.length === 0 && <p class="muted">No webhook endpoints.</p>}
      {webhooks.length > 0 && (
        <div class="scroll">
          <table>
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
                      onClick={() => setChosen(w.id)}
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
      {webhook && <Deliveries webhook={webhook} />}
    </main>
  );
}
