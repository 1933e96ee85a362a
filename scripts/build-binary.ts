/**
 * Builds the single self-contained executable `dist/ledger` (`npm run build:binary`) with Bun's
 * bundler (`--compile`): the service, its dependencies, the Bun runtime, libSQL's native addon,
 * the SQL migrations and the model catalog, in one file that runs from an empty folder.
 *
 *   node dist/scripts/build-binary.js [--outfile PATH]
 *
 * Under Node this script re-runs itself with the project's Bun (the `bun` devDependency). Under
 * Bun it writes a generated entry (dist/binary/entry.ts) that embeds `sql/*.sql` and
 * `data/models.json` as strings (src/embedded-assets.ts), the /docs bundle and the console's
 * bundle (src/console/assets.ts) before loading the CLI, then compiles it. The binary is for the platform that builds it: libSQL's addon is the host's one.
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { readFunctionFiles, readMigrationFiles } from "../src/db/migrator.ts";

/** The repository root, from scripts/ (run by Bun directly) or dist/scripts/ (compiled). */
const root = fileURLToPath(
  new URL(import.meta.url.includes("/dist/scripts/") ? "../../" : "../", import.meta.url),
);

/** The part of the Bun plugin API used here. */
interface BunPluginBuilder {
  onLoad(
    options: { filter: RegExp },
    load: (args: { path: string }) => { contents: string; loader: "js" },
  ): void;
}

/** The part of `Bun.build` used here (Bun ≥ 1.3: `compile` with the autoload switches). */
interface BunGlobal {
  build(config: {
    entrypoints: string[];
    target: "bun";
    compile: {
      outfile: string;
      autoloadDotenv: boolean;
      autoloadBunfig: boolean;
      autoloadPackageJson: boolean;
      autoloadTsconfig: boolean;
    };
    plugins: { name: string; setup(build: BunPluginBuilder): void }[];
  }): Promise<{ success: boolean; logs: unknown[] }>;
}

const { Bun } = globalThis as { Bun?: BunGlobal };

/** Runs this same script with the project's Bun; exits with its status. */
function rerunWithBun(): never {
  const require = createRequire(import.meta.url);
  const bunPackage = require.resolve("bun/package.json");
  const { bin } = JSON.parse(readFileSync(bunPackage, "utf8")) as { bin: { bun: string } };
  const bun = join(dirname(bunPackage), bin.bun);
  const script = fileURLToPath(import.meta.url);
  const result = spawnSync(bun, [script, ...process.argv.slice(2)], { stdio: "inherit" });
  if (result.error) throw result.error;
  process.exit(result.status ?? 1);
}

/**
 * The npm package holding libSQL's native addon for this machine, chosen as `libsql` itself
 * chooses it (platform, architecture, and on Linux glibc or musl).
 * @throws Error when that package is not installed
 */
function addonPackage(): string {
  const fromLibsql = createRequire(createRequire(import.meta.url).resolve("libsql"));
  const { familySync, MUSL } = fromLibsql("detect-libc") as {
    familySync(): string | null;
    MUSL: string;
  };
  const { platform, arch } = process;
  let name = `@libsql/${platform}-${arch}`;
  if (platform === "linux") {
    const musl = familySync() === MUSL;
    if (arch === "arm") name += musl ? "-musleabihf" : "-gnueabihf";
    else name += musl ? "-musl" : "-gnu";
  } else if (platform === "win32") name += "-msvc";
  try {
    fromLibsql.resolve(name);
  } catch {
    throw new Error(`${name} (libSQL's native addon for this machine) is not installed`);
  }
  return name;
}

/**
 * A Bun build plugin that makes the `libsql` package's `require(`@libsql/${target}`)` (chosen
 * at run time, so invisible to the bundler) a static `require` of this machine's addon package,
 * so that its `.node` file is embedded in the executable.
 */
function libsqlStaticAddon(addon: string) {
  // biome-ignore lint/suspicious/noTemplateCurlyInString: the literal text of libsql/index.js.
  const dynamic = "require(`@libsql/${target}`)";
  return {
    name: "libsql-static-addon",
    setup(build: BunPluginBuilder) {
      build.onLoad({ filter: /[\\/]node_modules[\\/]libsql[\\/]index\.js$/ }, ({ path }) => {
        const source = readFileSync(path, "utf8");
        if (!source.includes(dynamic)) {
          throw new Error(`${path} no longer contains ${dynamic}: update libsqlStaticAddon`);
        }
        return {
          contents: source.replace(dynamic, `require(${JSON.stringify(addon)})`),
          loader: "js",
        };
      });
    },
  };
}

/** Writes the binary's entry: the embedded files, then the CLI. @returns its path */
/** The installed @scalar/api-reference standalone bundle that /docs serves. */
function docsBundleFile(): string {
  return createRequire(import.meta.url).resolve("@scalar/api-reference/browser/standalone.js");
}

/**
 * A file of the console's bundle in dist/console/ (scripts/build-console.ts).
 * @throws Error when `npm run build` has not written it
 */
function consoleFile(name: "app.js" | "app.css"): string {
  const file = join(root, "dist", "console", name);
  try {
    statSync(file);
  } catch {
    throw new Error(`${file} is missing: run npm run build first`);
  }
  return file;
}

async function writeEntry(dir: string): Promise<string> {
  // SQLite's migrations by their names, PostgreSQL's under `postgres/`, its database functions
  // under `postgres/functions/` (src/db/migrator.ts).
  const migrations: Record<string, string> = { ...(await readMigrationFiles(join(root, "sql"))) };
  const postgres = join(root, "sql", "postgres");
  for (const [name, text] of Object.entries({
    ...(await readMigrationFiles(postgres)),
    ...(await readFunctionFiles(postgres)),
  })) {
    migrations[`postgres/${name}`] = text;
  }
  const modelCatalog = readFileSync(join(root, "data", "models.json"), "utf8");
  const { version } = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as {
    version: string;
  };
  const entry = join(dir, "entry.ts");
  const from = (file: string) => JSON.stringify(relative(dir, join(root, file)));
  writeFileSync(
    entry,
    [
      "// Generated by scripts/build-binary.ts: the single binary's entry. Do not edit.",
      `import { setEmbeddedAssets } from ${from("src/embedded-assets.ts")};`,
      `import { setDocsBundle } from ${from("src/http/docs.ts")};`,
      `import { setConsoleAssets } from ${from("src/console/assets.ts")};`,
      // The /docs page's script (Scalar's standalone bundle), embedded as text by Bun.
      `import docsBundle from ${JSON.stringify(docsBundleFile())} with { type: "text" };`,
      // The console's bundle (npm run build wrote it), embedded as text by Bun.
      `import consoleJs from ${JSON.stringify(consoleFile("app.js"))} with { type: "text" };`,
      `import consoleCss from ${JSON.stringify(consoleFile("app.css"))} with { type: "text" };`,
      "",
      `setEmbeddedAssets(${JSON.stringify({ migrations, modelCatalog, version }, null, 2)});`,
      "setDocsBundle(docsBundle);",
      'setConsoleAssets({ "app.js": consoleJs, "app.css": consoleCss });',
      "",
      "// Loaded only now, so that the assets are in place before any command runs.",
      `await import(${from("src/cli/index.ts")});`,
      "",
    ].join("\n"),
  );
  const names = Object.keys(migrations).sort().join(", ");
  process.stdout.write(
    `embedded: ${names}, data/models.json (${modelCatalog.length} bytes), the /docs bundle, the console\n`,
  );
  return entry;
}

async function build(bun: BunGlobal) {
  const { values } = parseArgs({ options: { outfile: { type: "string" } } });
  const outfile = resolve(values.outfile ?? join(root, "dist", "ledger"));
  const dir = join(root, "dist", "binary");
  mkdirSync(dir, { recursive: true });
  const entry = await writeEntry(dir);
  const addon = addonPackage();
  const started = Date.now();
  const result = await bun.build({
    entrypoints: [entry],
    target: "bun",
    // The binary reads its configuration from the environment only, like `node`: no .env,
    // bunfig.toml, package.json or tsconfig.json of the folder it happens to run in.
    compile: {
      outfile,
      autoloadDotenv: false,
      autoloadBunfig: false,
      autoloadPackageJson: false,
      autoloadTsconfig: false,
    },
    plugins: [libsqlStaticAddon(addon)],
  });
  if (!result.success) {
    for (const log of result.logs) process.stderr.write(`${String(log)}\n`);
    throw new Error("bun build failed");
  }
  const megabytes = (statSync(outfile).size / 1024 / 1024).toFixed(1);
  process.stdout.write(
    `built ${relative(process.cwd(), outfile) || outfile} (${megabytes} MB, ${addon} embedded) in ${Date.now() - started} ms\n`,
  );
}

if (!Bun) rerunWithBun();
build(Bun).catch((err: unknown) => {
  process.stderr.write(`build-binary: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
