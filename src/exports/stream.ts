/**
 * The streamed answer of an export (docs/api.md#exports, docs/design.md#exports): a header,
 * then one chunk per keyset page, each page read only when the client has taken the previous
 * one (the stream is pulled, with no queue of its own), so memory stays bounded by a page or two
 * however many rows are exported. A client that disconnects cancels the stream: no further page
 * is read. Each export ends with one log line and its metrics (pages, rows, outcome).
 */
import type { Context } from "hono";
import type { AppDeps } from "../http/context.ts";
import type { ExportName, ExportOutcome } from "../metrics.ts";

/** The exports' formats. */
export type ExportFormat = "csv" | "ndjson";

/** Rows read by an export at a time: one keyset page. */
export const EXPORT_PAGE_ROWS = 1000;

/** What an export streams. */
export interface ExportSource<R> {
  name: ExportName;
  format: ExportFormat;
  /** The file name offered to the browser (`transactions-….csv`). */
  filename: string;
  /** What comes before the first row (the CSV header row; empty for NDJSON). */
  header: string;
  /** The keyset pages, oldest first (see `keysetPages`). */
  pages: AsyncGenerator<R[], void>;
  /** A page's rows in the export's format, each line ended. */
  encode: (rows: R[]) => Promise<string>;
}

const CONTENT_TYPE: Record<ExportFormat, string> = {
  csv: "text/csv; charset=utf-8",
  ndjson: "application/x-ndjson",
};

/** One export under way: what it has read, and its one ending (metric and log line). */
interface ExportRun {
  pages: number;
  rows: number;
  ended: boolean;
  /** Records how the export ended; only the first call counts. */
  end(outcome: ExportOutcome, err?: unknown): void;
}

function exportRun<R>(
  c: Context,
  deps: Pick<AppDeps, "logger" | "metrics">,
  source: ExportSource<R>,
): ExportRun {
  const startedMs = performance.now();
  const run: ExportRun = {
    pages: 0,
    rows: 0,
    ended: false,
    end(outcome, err) {
      if (run.ended) return;
      run.ended = true;
      deps.metrics.observeExportEnd(source.name, outcome);
      const entry = {
        requestId: c.get("requestId"),
        export: source.name,
        format: source.format,
        outcome,
        pages: run.pages,
        rows: run.rows,
        durationMs: Math.round(performance.now() - startedMs),
        ...(err === undefined ? {} : { err: err instanceof Error ? err.message : String(err) }),
      };
      if (outcome === "failed") deps.logger.error(entry, "export");
      else deps.logger.info(entry, "export");
    },
  };
  return run;
}

/**
 * Answers 200 with `source` streamed. The first page is read before the answer starts, so a
 * database that cannot be read is still the API's 503 rather than a cut-short 200.
 * @throws whatever reading the first page throws
 */
export async function exportResponse<R>(
  c: Context,
  deps: Pick<AppDeps, "logger" | "metrics">,
  source: ExportSource<R>,
): Promise<Response> {
  const encoder = new TextEncoder();
  const run = exportRun(c, deps, source);
  /** The next page as bytes, or null after the last one. */
  const next = async (): Promise<Uint8Array | null> => {
    const page = await source.pages.next();
    if (page.done) return null;
    run.pages++;
    run.rows += page.value.length;
    deps.metrics.observeExportPage(source.name, page.value.length);
    return encoder.encode(await source.encode(page.value));
  };
  let first: Uint8Array | null;
  try {
    first = await next();
  } catch (err) {
    run.end("failed", err);
    throw err;
  }
  const head = encoder.encode(source.header);
  const start = first === null ? [head] : [head, first];
  const body = pulledStream(start, first === null, next, run, () => {
    // Ends the walk once a page being read has come back; no page is read after it.
    source.pages.return().catch(() => {});
  });
  return new Response(body, {
    status: 200,
    headers: {
      "Content-Type": CONTENT_TYPE[source.format],
      "Content-Disposition": `attachment; filename="${source.filename}"`,
      "Cache-Control": "no-store",
      "X-Content-Type-Options": "nosniff",
    },
  });
}

/**
 * A stream of `start`'s chunks (all of it when `done`), then of `next()`'s until it gives null,
 * each `next()` called only when the reader wants more (no queue: `highWaterMark` 0). A cancel (the client gone)
 * ends `run` and calls `stop`; a failure of `next` ends `run` and errors the stream.
 */
function pulledStream(
  start: Uint8Array[],
  done: boolean,
  next: () => Promise<Uint8Array | null>,
  run: ExportRun,
  stop: () => void,
): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>(
    {
      start(controller) {
        for (const chunk of start) controller.enqueue(chunk);
        if (done) {
          controller.close();
          run.end("completed");
        }
      },
      async pull(controller) {
        try {
          const chunk = await next();
          if (run.ended) return; // cancelled while the page was being read
          if (chunk) controller.enqueue(chunk);
          else {
            controller.close();
            run.end("completed");
          }
        } catch (err) {
          if (run.ended) return;
          run.end("failed", err);
          // The client sees the answer cut short (no final chunk), never a partial file as whole.
          controller.error(err);
        }
      },
      cancel() {
        run.end("cancelled");
        stop();
      },
    },
    { highWaterMark: 0 },
  );
}

/**
 * The file name of an export: `transactions-acc_…-20261121T082245Z.csv` for one account's,
 * `usage-all-20261121T082245Z.ndjson` for the project's; only characters safe in a header.
 * @param accountId the account exported (an internal id), or undefined for the whole project
 * @param nowMs the export's start, epoch ms
 */
export function exportFilename(
  name: ExportName,
  accountId: string | undefined,
  format: ExportFormat,
  nowMs: number,
): string {
  const stamp = new Date(nowMs).toISOString().replace(/[-:]/g, "").replace(/\.\d+/, "");
  const who = (accountId ?? "all").replace(/[^\w-]/g, "_");
  return `${name}-${who}-${stamp}.${format}`;
}
