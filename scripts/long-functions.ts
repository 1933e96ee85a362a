/**
 * Lists the functions of `src/` longer than about 70 lines, the rule that keeps each function
 * short enough to read at once (docs/design.md#layout-of-the-code), longest first:
 * `lines file:line name`.
 * A function's lines run from its first line to its closing brace, its docstring excluded; a
 * function nested in a longer one is listed on its own too.
 *
 * Usage: `npm run build && node dist/scripts/long-functions.js [--max N] [DIR]`; default 70
 * and `src`.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import ts from "typescript";

const { values, positionals } = parseArgs({
  options: { max: { type: "string", default: "70" } },
  allowPositionals: true,
});
const max = Number(values.max);

/** Every `.ts`/`.tsx` file under `dir`, the generated client types left out. */
function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return /\.tsx?$/.test(name) && !path.endsWith("client/openapi.ts") ? [path] : [];
  });
}

/** The name a reader finds a function by: its own, its variable's, its property's, or `(anonymous)`. */
function nameOf(node: ts.Node): string {
  const named = node as ts.Node & { name?: ts.Node };
  if (named.name) return named.name.getText();
  const parent = node.parent;
  if (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent)) {
    return parent.name.getText();
  }
  if (ts.isCallExpression(parent))
    return `(argument of ${parent.expression.getText().slice(0, 40)})`;
  return "(anonymous)";
}

const found: { lines: number; where: string; name: string }[] = [];
for (const file of sourceFiles(positionals[0] ?? "src")) {
  const source = ts.createSourceFile(
    file,
    readFileSync(file, "utf8"),
    ts.ScriptTarget.Latest,
    true,
  );
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && "body" in node && node.body) {
      const start = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
      const end = source.getLineAndCharacterOfPosition(node.getEnd()).line;
      const lines = end - start + 1;
      if (lines > max) found.push({ lines, where: `${file}:${start + 1}`, name: nameOf(node) });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
}
found.sort((a, b) => b.lines - a.lines);
for (const f of found) process.stdout.write(`${f.lines} ${f.where} ${f.name}\n`);
