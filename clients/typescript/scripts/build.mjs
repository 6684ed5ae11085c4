// `npm run build` (and `prepack`, so `npm pack` always ships a fresh build): src/ -> dist/,
// ES modules with declaration files, for Node 18 on. tsc rewrites the sources' `.ts` import
// paths in the JavaScript it writes (rewriteRelativeImportExtensions) but keeps them in the
// declarations, which TypeScript before 5 cannot read: they are rewritten here to `.js`. The
// generated src/schema.d.ts is a declaration file, which tsc never copies: it is copied too.
import { execFileSync } from "node:child_process";
import { copyFileSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const dist = join(root, "dist");
rmSync(dist, { recursive: true, force: true });
const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
execFileSync(process.execPath, [tsc, "-p", join(root, "tsconfig.build.json")], { stdio: "inherit" });
for (const name of readdirSync(dist).filter((file) => file.endsWith(".d.ts"))) {
  const file = join(dist, name);
  writeFileSync(file, readFileSync(file, "utf8").replace(/(from "\.\/[\w-]+)\.ts"/g, '$1.js"'));
}
copyFileSync(join(root, "src", "schema.d.ts"), join(dist, "schema.d.ts"));
