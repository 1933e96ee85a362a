/** Small pieces every page uses: loading an API answer, errors, amounts, dates, paging. */
import { useCallback, useEffect, useState } from "hono/jsx/dom";
import { ApiError, int, type Num } from "./api.ts";
import type { Pagination } from "./types.ts";

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

/** The API's error as it answered it: code and message. */
export function ErrorMessage({ error }: { error: ApiError | Error | undefined }) {
  if (!error) return null;
  const code = error instanceof ApiError ? `${error.code}: ` : "";
  return (
    <p class="error" role="alert">
      {code}
      {error.message}
    </p>
  );
}

/** The state of a section: its error, "Loading…", or nothing once loaded. */
export function Status<T>({ loaded }: { loaded: Loaded<T> }) {
  if (loaded.error) return <ErrorMessage error={loaded.error} />;
  if (loaded.loading && loaded.data === undefined) return <p class="muted">Loading…</p>;
  return null;
}

/** An amount exactly as the API wrote it. */
export function Amount({ value }: { value: Num | null | undefined }) {
  return <span class="num">{value === null || value === undefined ? "–" : String(value)}</span>;
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
  const range = shown === 0 ? "none" : `${offset + 1}–${offset + shown}`;
  return (
    <nav class="pager" aria-label={`${label} pages`}>
      <span>
        Showing {range} of {total}
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
