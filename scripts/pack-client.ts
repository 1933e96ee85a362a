/**
 * `npm run pack:client`: the typed client as its own small package, `credit-ledger-client`
 * (docs/api.md#getting-the-client; contract section 15). It compiles src/client (the same
 * sources as `credit-ledger/client`) into a staging folder, ESM with type declarations, against
 * the browser's `lib` and no Node types (so a Node-only API fails the build); generates a
 * package.json whose dependencies are exactly the packages the compiled files import, at the
 * versions the root package.json pins; and runs `npm pack` there, writing
 * `credit-ledger-client-<version>.tgz` to `--pack-destination` (default: the working folder).
 *
 * @throws Error when the client imports a package the root package.json does not depend on, or
 *   a Node built-in (`node:…`), or when tsc or npm fail
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { builtinModules } from "node:module";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const ROOT = fileURLToPath(
  new URL(import.meta.url.includes("/dist/") ? "../../" : "../", import.meta.url),
);

/** The fields of the root package.json that the client's package takes over. */
interface RootPackage {
  version: string;
  license: string;
  dependencies: Record<string, string>;
}

/** Every file under `dir`, as paths relative to it. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name).slice(dir.length + 1));
}

/** The package a bare import specifier names: `a/b` → `a`, `@s/a/b` → `@s/a`. */
function packageOf(specifier: string): string {
  const parts = specifier.split("/");
  return (specifier.startsWith("@") ? parts.slice(0, 2) : parts.slice(0, 1)).join("/");
}

/** The bare (non-relative) import specifiers of a compiled `.js` or `.d.ts` file. */
function bareImports(text: string): string[] {
  const found = new Set<string>();
  const pattern = /(?:\bfrom\s*|\bimport\s*\(?\s*)["']([^"']+)["']/g;
  for (const match of text.matchAll(pattern)) {
    const specifier = match[1] ?? "";
    if (!specifier.startsWith(".") && !specifier.startsWith("/")) found.add(specifier);
  }
  return [...found];
}

/**
 * The dependencies of the compiled client in `dist`: each package its files import, pinned to
 * the root package.json's version.
 * @throws Error on a Node built-in or a package the root does not depend on
 */
function dependenciesOf(dist: string, root: RootPackage): Record<string, string> {
  const names = new Set<string>();
  for (const file of filesUnder(dist)) {
    if (!file.endsWith(".js") && !file.endsWith(".d.ts")) continue;
    for (const specifier of bareImports(readFileSync(join(dist, file), "utf8"))) {
      if (specifier.startsWith("node:") || builtinModules.includes(specifier)) {
        throw new Error(`the client imports the Node built-in ${specifier} (${file})`);
      }
      names.add(packageOf(specifier));
    }
  }
  const pinned: Record<string, string> = {};
  for (const name of [...names].sort()) {
    const version = root.dependencies[name];
    if (version === undefined) {
      throw new Error(`the client imports ${name}, which package.json does not depend on`);
    }
    pinned[name] = version;
  }
  return pinned;
}

/** Compiles src/client into `stage/dist`: ESM, declarations, no Node types, browser lib. */
function compileClient(stage: string): void {
  const config = join(stage, "tsconfig.json");
  writeFileSync(
    config,
    JSON.stringify({
      extends: join(ROOT, "tsconfig.json"),
      compilerOptions: {
        lib: ["ES2022", "DOM", "DOM.Iterable"],
        types: [],
        declaration: true,
        noEmit: false,
        sourceMap: false,
        rootDir: join(ROOT, "src/client"),
        outDir: join(stage, "dist"),
      },
      include: [join(ROOT, "src/client")],
    }),
  );
  execFileSync(join(ROOT, "node_modules/.bin/tsc"), ["-p", config], { stdio: "inherit" });
  rmSync(config);
}

const README = `# credit-ledger-client

The typed client of the credit ledger service: an \`openapi-fetch\` client typed by the
service's own OpenAPI document that never rounds an amount, exact amount helpers, and
\`verifyWebhook\` for the Standard Webhooks signature of its deliveries. ESM with type
declarations; Node 20 or later, Bun, Deno and browsers.

\`\`\`ts
import { addAmounts, compareAmounts, createLedgerClient, verifyWebhook } from "credit-ledger-client";
\`\`\`

Built by \`npm run pack:client\` in the service's repository, from the same sources as
\`credit-ledger/client\`; its documentation is the service's docs/api.md ("Typed client").
`;

/** The package.json of the client's package. */
function manifest(root: RootPackage, dependencies: Record<string, string>) {
  return {
    name: "credit-ledger-client",
    version: root.version,
    description:
      "Typed client of the credit ledger service: openapi-fetch, exact amounts, webhook verification.",
    license: root.license,
    type: "module",
    sideEffects: false,
    engines: { node: ">=20" },
    main: "./dist/index.js",
    types: "./dist/index.d.ts",
    exports: {
      ".": { types: "./dist/index.d.ts", default: "./dist/index.js" },
      "./package.json": "./package.json",
    },
    files: ["dist/"],
    dependencies,
  };
}

/**
 * Stages and packs the client. @returns the tarball's absolute path
 * @throws Error as the module's docstring says
 */
export function packClient(destination: string): string {
  const root = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as RootPackage;
  const stage = mkdtempSync(join(tmpdir(), "credit-ledger-client-"));
  try {
    compileClient(stage);
    const dependencies = dependenciesOf(join(stage, "dist"), root);
    writeFileSync(
      join(stage, "package.json"),
      `${JSON.stringify(manifest(root, dependencies), null, 2)}\n`,
    );
    writeFileSync(join(stage, "README.md"), README);
    const out = execFileSync(
      "npm",
      ["pack", "--ignore-scripts", "--pack-destination", resolve(destination)],
      { cwd: stage, encoding: "utf8" },
    );
    const name = out.trim().split("\n").at(-1) ?? "";
    return join(resolve(destination), name);
  } finally {
    rmSync(stage, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({ options: { "pack-destination": { type: "string" } } });
  console.log(packClient(values["pack-destination"] ?? process.cwd()));
}
