/** Small pieces every page uses: loading an API answer, errors, amounts, dates, paging. */
import { type Child, useCallback, useEffect, useState } from "hono/jsx/dom";
import { ApiError, int, type Num } from "./api.ts";
import { explainApiError, explainOtherError } from "./errors.ts";
import { grouped } from "./format.ts";
import type { Pagination } from "./types.ts";

export { type Column, DataTable } from "./data-table.tsx";

export interface Loaded<T> {
  data: T | undefined;
  error: ApiError | Error | undefined;
  loading: boolean;
  reload: () => void;
}

/**
 * Runs `load` now and whenever `deps` change; `reload()` runs it again. An answer that arrives
 * after a newer request started is dropped.
 */
export function useLoad<T>(load: () => Promise<T>, deps: readonly unknown[]): Loaded<T> {
  const [state, setState] = useState<{ data?: T; error?: ApiError | Error; loading: boolean }>({
    loading: true,
  });
  const [round, setRound] = useState(0);
  // `deps` are the caller's inputs of `load`.
  useEffect(() => {
    let current = true;
    setState((s) => ({ ...s, loading: true }));
    load().then(
      (data) => current && setState({ data, loading: false }),
      (error: unknown) =>
        current &&
        setState({
          error: error instanceof Error ? error : new Error(String(error)),
          loading: false,
        }),
    );
    return () => {
      current = false;
    };
  }, [...deps, round]);
  const reload = useCallback(() => setRound((r) => r + 1), []);
  return { data: state.data, error: state.error, loading: state.loading, reload };
}

/**
 * An error as a sentence for a person (errors.ts), with the API's message as a detail when it
 * says more; the API's code is kept in `data-code`, out of sight.
 */
export function ErrorMessage({ error }: { error: ApiError | Error | undefined }) {
  if (!error) return null;
  const { sentence, detail, code } =
    error instanceof ApiError
      ? explainApiError(error.code, error.status, error.message)
      : explainOtherError(error);
  return (
    <p class="error" role="alert" data-code={code}>
      {sentence}
      {detail && <span class="detail"> Details: {detail}</span>}
    </p>
  );
}

/** The state of a section: its error, "Loading…", or nothing once loaded. */
export function Status<T>({ loaded }: { loaded: Loaded<T> }) {
  if (loaded.error) return <ErrorMessage error={loaded.error} />;
  if (loaded.loading && loaded.data === undefined) return <p class="muted">Loading…</p>;
  return null;
}

/**
 * An amount, a price or a count exactly as the API wrote it, its digits grouped by thousands
 * (`9,000,000,000`), on one line. `sign` (`+`, `−`) goes on the same line before it.
 */
export function Amount({
  value,
  sign = "",
}: {
  value: Num | number | string | null | undefined;
  sign?: string;
}) {
  return (
    <span class="num">
      {value === null || value === undefined ? "–" : `${sign}${grouped(value)}`}
    </span>
  );
}

/**
 * A model id (`meta-llama/llama-4-maverick-17b-128e-instruct`), on one line: never broken
 * inside, in a font small enough that the catalog's longest fits at 390 px.
 */
export function ModelId({ id }: { id: string | null }) {
  if (id === null) return <span class="muted">–</span>;
  return <code class="word model-id">{id}</code>;
}

/** A word that is never broken inside nor cut: a status, an event type, a time zone. */
export function Word({ children }: { children: Child }) {
  return <span class="word">{children}</span>;
}

/** A timestamp of the API (`2026-11-21T08:22:45.903Z`) as `2026-11-21 08:22:45 UTC`. */
export function When({ at }: { at: string | null | undefined }) {
  if (!at) return <span class="muted">–</span>;
  const shown = at.replace("T", " ").replace(/(\.\d+)?Z$/, " UTC");
  return <time datetime={at}>{shown}</time>;
}

/** "Showing 21–40 of 95" with Previous / Next buttons. */
export function Pager({
  pagination,
  shown,
  onOffset,
  label,
}: {
  pagination: Pagination | undefined;
  shown: number;
  onOffset: (offset: number) => void;
  label: string;
}) {
  if (!pagination) return null;
  const offset = int(pagination.offset);
  const limit = int(pagination.limit);
  const total = int(pagination.totalCount);
  const range = shown === 0 ? "none" : `${grouped(offset + 1)}–${grouped(offset + shown)}`;
  return (
    <nav class="pager" aria-label={`${label} pages`}>
      <span>
        Showing {range} of {grouped(total)}
      </span>
      <button
        type="button"
        disabled={offset === 0}
        onClick={() => onOffset(Math.max(0, offset - limit))}
      >
        Previous
      </button>
      <button type="button" disabled={!pagination.hasMore} onClick={() => onOffset(offset + limit)}>
        Next
      </button>
    </nav>
  );
}

/**
 * The confirmation of a write the operator asked for: its question (`children`, the legend),
 * then Confirm and Cancel, both disabled while the write runs (`busy`).
 */
export function Confirmation(props: {
  children: Child;
  busy: boolean;
  onConfirm: () => void;
  onCancel: () => void;
}) {
  return (
    <fieldset class="confirm">
      <legend>{props.children}</legend>
      <button type="button" class="primary" onClick={props.onConfirm} disabled={props.busy}>
        Confirm
      </button>
      <button type="button" onClick={props.onCancel} disabled={props.busy}>
        Cancel
      </button>
    </fieldset>
  );
}
