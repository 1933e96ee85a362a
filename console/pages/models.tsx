/** Models: the catalog with its prices (`GET /v1/models`), USD per million tokens. */
import { useState } from "hono/jsx/dom";
import { call } from "../api.ts";
import { Amount, type Column, DataTable, ModelId, Status, useLoad, Word } from "../components.tsx";
import type { Model } from "../types.ts";

const columns: Column<Model>[] = [
  { label: "Model", cell: (m) => <ModelId id={m.modelId} /> },
  { label: "Name", cell: (m) => m.displayName },
  { label: "Provider", cell: (m) => m.provider },
  { label: "Tier", cell: (m) => <Word>{m.tier}</Word> },
  { label: "Input", end: true, cell: (m) => <Amount value={m.pricing.text.inputPerMillion} /> },
  {
    label: "Cached input",
    end: true,
    cell: (m) => <Amount value={m.pricing.text.cachedInputPerMillion} />,
  },
  { label: "Output", end: true, cell: (m) => <Amount value={m.pricing.text.outputPerMillion} /> },
  { label: "Context window", end: true, cell: (m) => <Amount value={m.pricing.contextWindow} /> },
  { label: "Prices as of", cell: (m) => <time datetime={m.pricesAsOf}>{m.pricesAsOf}</time> },
];

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
          <DataTable label="Models" columns={columns} rows={shown} rowKey={(m) => m.modelId} />
        </>
      )}
    </main>
  );
}
