/**
 * Bundles the operator console (`console/`, docs/operations.md#operator-console) with esbuild
 * into `dist/console/app.js` and `dist/console/app.css`, which `GET /console` serves and the
 * single binary embeds. Part of `npm run build`:
 *
 *   node dist/scripts/build-console.js
 *
 * The bundle holds everything the page runs (Hono's client JSX runtime, uPlot, lossless-json)
 * and asks for nothing outside the service: no CDN, no font.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

/** The repository root, from scripts/ or dist/scripts/. */
const root = fileURLToPath(
  new URL(import.meta.url.includes("/dist/scripts/") ? "../../" : "../", import.meta.url),
);

export interface ConsoleBundle {
  "app.js": string;
  "app.css": string;
}

/** Bundles the console in memory. @throws Error with esbuild's messages when it fails */
export async function buildConsole(): Promise<ConsoleBundle> {
  const result = await build({
    absWorkingDir: root,
    entryPoints: { app: "console/main.tsx" },
    tsconfig: "console/tsconfig.json",
    bundle: true,
    format: "esm",
    platform: "browser",
    target: ["chrome120", "firefox120", "safari17"],
    minify: true,
    legalComments: "eof",
    charset: "utf8",
    outdir: "dist/console",
    write: false,
    logLevel: "silent",
  });
  const text = (ext: string) => {
    const file = result.outputFiles.find((f) => f.path.endsWith(`app${ext}`));
    if (!file) throw new Error(`esbuild wrote no app${ext}`);
    return file.text;
  };
  return { "app.js": text(".js"), "app.css": text(".css") };
}

/** Writes the bundle into `dist/console/`. @returns the files' sizes in bytes */
export async function writeConsole(): Promise<Record<keyof ConsoleBundle, number>> {
  const bundle = await buildConsole();
  const dir = join(root, "dist", "console");
  mkdirSync(dir, { recursive: true });
  for (const [name, text] of Object.entries(bundle)) writeFileSync(join(dir, name), text);
  return {
    "app.js": Buffer.byteLength(bundle["app.js"]),
    "app.css": Buffer.byteLength(bundle["app.css"]),
  };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  writeConsole().then(
    (sizes) =>
      process.stdout.write(
        `console: dist/console/app.js (${sizes["app.js"]} bytes), app.css (${sizes["app.css"]} bytes)\n`,
      ),
    (err: unknown) => {
      process.stderr.write(`build-console: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exit(1);
    },
  );
}
