/**
 * The account's exports (docs/api.md#exports): its whole ledger and its usage, oldest first, as
 * CSV or NDJSON files. Each button fetches the export with the tab's key in a header and saves
 * the answer (`download` in ../api.ts): the key never goes into a link or a URL.
 */
import { useState } from "hono/jsx/dom";
import { download } from "../api.ts";
import { ErrorMessage } from "../components.tsx";

/** The downloads offered: what the button says, the export route, the format. */
const DOWNLOADS = [
  { label: "Download ledger (CSV)", path: "v1/transactions/export", format: "csv" },
  { label: "Download ledger (NDJSON)", path: "v1/transactions/export", format: "ndjson" },
  { label: "Download usage (CSV)", path: "v1/usage/export", format: "csv" },
  { label: "Download usage (NDJSON)", path: "v1/usage/export", format: "ndjson" },
] as const;

interface State {
  busy: boolean;
  saved?: string;
  error?: Error;
}

export function ExportsSection({ accountId }: { accountId: string }) {
  const [state, setState] = useState<State>({ busy: false });
  const save = async (path: string, format: string) => {
    setState({ busy: true });
    try {
      const name = await download(path, { accountId, format });
      setState({ busy: false, saved: name });
    } catch (err) {
      setState({ busy: false, error: err instanceof Error ? err : new Error(String(err)) });
    }
  };
  return (
    <section aria-labelledby="exports">
      <h2 id="exports">Exports</h2>
      <p class="muted">Every ledger entry or usage record of this account, oldest first.</p>
      <div class="downloads">
        {DOWNLOADS.map((d) => (
          <button
            key={d.label}
            type="button"
            disabled={state.busy}
            onClick={() => void save(d.path, d.format)}
          >
            {d.label}
          </button>
        ))}
      </div>
      {state.busy && <p class="muted">Preparing the file…</p>}
      {state.saved && (
        <p class="notice" role="status">
          Saved {state.saved}
        </p>
      )}
      <ErrorMessage error={state.error} />
    </section>
  );
}
