/**
 * The service's version: `version` of the repository's package.json, read from this module's
 * location (src/ or dist/src/), as the migrator finds `sql/`; the single binary, which has no
 * package.json beside it, carries the version in its embedded assets.
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { embeddedAssets } from "./embedded-assets.ts";

/** The path of package.json from this module (src/version.ts or dist/src/version.js). */
function packageJsonPath(): string {
  const here = fileURLToPath(new URL(".", import.meta.url));
  return here.includes("/dist/")
    ? fileURLToPath(new URL("../../package.json", import.meta.url))
    : fileURLToPath(new URL("../package.json", import.meta.url));
}

/**
 * The version, e.g. `0.1.0`.
 * @throws Error when package.json cannot be read or has no version
 */
export function ledgerVersion(): string {
  const embedded = embeddedAssets()?.version;
  if (embedded !== undefined) return embedded;
  const parsed: unknown = JSON.parse(readFileSync(packageJsonPath(), "utf8"));
  const version =
    parsed && typeof parsed === "object" && "version" in parsed ? parsed.version : undefined;
  if (typeof version !== "string") throw new Error("package.json has no version");
  return version;
}
