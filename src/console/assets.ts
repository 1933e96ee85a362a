/**
 * The operator console's two built files, `app.js` and `app.css` (docs/operations.md#operator-console):
 * `npm run build` bundles them from `console/` into `dist/console/` (scripts/build-console.ts);
 * the single binary carries them embedded (`setConsoleAssets`). Each is kept in memory with its
 * gzip form and an ETag.
 */
import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";

export type ConsoleAssetName = "app.js" | "app.css";

export interface ConsoleAsset {
  body: Buffer;
  gzip: Buffer;
  etag: string;
  contentType: string;
}

const CONTENT_TYPES: Record<ConsoleAssetName, string> = {
  "app.js": "text/javascript; charset=utf-8",
  "app.css": "text/css; charset=utf-8",
};

let assets: Promise<Record<ConsoleAssetName, ConsoleAsset>> | undefined;

function asset(name: ConsoleAssetName, source: string | Uint8Array): ConsoleAsset {
  const body = Buffer.from(source);
  const etag = `"${createHash("sha256").update(body).digest("base64url").slice(0, 27)}"`;
  return { body, gzip: gzipSync(body), etag, contentType: CONTENT_TYPES[name] };
}

/** For builds that carry the console inside the program (the single binary). */
export function setConsoleAssets(files: Record<ConsoleAssetName, string | Uint8Array>): void {
  assets = Promise.resolve({
    "app.js": asset("app.js", files["app.js"]),
    "app.css": asset("app.css", files["app.css"]),
  });
}

/** `dist/console/`, found from this module's location (src/console or dist/src/console). */
export function consoleBuildDir(): string {
  const here = fileURLToPath(new URL(".", import.meta.url));
  return here.includes("/dist/src/")
    ? fileURLToPath(new URL("../../console/", import.meta.url))
    : fileURLToPath(new URL("../../dist/console/", import.meta.url));
}

/**
 * The console's built files, read once from `dist/console/` unless set.
 * @throws Error when they are not built (a failed read is tried again next time)
 */
export function consoleAssets(): Promise<Record<ConsoleAssetName, ConsoleAsset>> {
  if (!assets) {
    const dir = consoleBuildDir();
    const loading = (async () => ({
      "app.js": asset("app.js", await readFile(`${dir}app.js`)),
      "app.css": asset("app.css", await readFile(`${dir}app.css`)),
    }))();
    loading.catch(() => {
      if (assets === loading) assets = undefined;
    });
    assets = loading;
  }
  return assets;
}
