/** Models: the catalog with its prices (`GET /v1/models`), USD per million tokens. */
import { useState } from "hono/jsx/dom";
import { call } from "../api.ts";
import { Amount, Status, useLoad } from "../components.tsx";
import type { Model } from "../types.ts";

export function ModelsPage() {
  const loaded = useLoad(() => call<{ models: Model[] }>("GET", "v1/models"), []);
  const [provider, setProvider] = useState("");
  const models = loaded.data?.models ?? [];
  const providers = [...new Set(models.map((m) => m.provider))].sort();
  const shown = provider === "" ? models : models.filter((m) => m.provider === provider);
  return (
    <main>
      <h1>Models</h1>
      <p class="muted">Prices in USD per million tokens.</p>
      <Status loaded={loaded} />
      {models.length > 0 && (
        <>
          <form class="inline" onSubmit={(e: Event) => e.preventDefault()}>
            <label for="provider">Provider</label>
            <select
              id="provider"
              onChange={(e: Event) => setProvider((e.target as HTMLSelectElement).value)}
            >
              <option value="">All</option>
              {providers.map((p) => (
                <option key={p} value={p} selected={p === provider}>
                  {p}
                </option>
              ))}
            </select>
          </form>
          <div class="scroll">
            <table>
              <thead>
                <tr>
                  <th scope="col">Model</th>
                  <th scope="col">Name</th>
                  <th scope="col">Provider</th>
                  <th scope="col">Tier</th>
                  <th scope="col" class="num">
                    Input
                  </th>
                  <th scope="col" class="num">
                    Cached input
                  </th>
                  <th scope="col" class="num">
                    Output
                  </th>
                  <th scope="col" class="num">
                    Context window
                  </th>
                  <th scope="col">Prices as of</th>
                </tr>
              </thead>
              <tbody>
                {shown.map((m) => (
                  <tr key={m.modelId}>
                    <td>
                      <code>{m.modelId}</code>
                    </td>
                    <td>{m.displayName}</td>
                    <td>{m.provider}</td>
                    <td>{m.tier}</td>
                    <td class="num">
                      <Amount value={m.pricing.text.inputPerMillion} />
                    </td>
                    <td class="num">
                      <Amount value={m.pricing.text.cachedInputPerMillion} />
                    </td>
                    <td class="num">
                      <Amount value={m.pricing.text.outputPerMillion} />
                    </td>
                    <td class="num">
                      <Amount value={m.pricing.contextWindow} />
                    </td>
                    <td>{m.pricesAsOf}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </>
      )}
    </main>
  );
}
