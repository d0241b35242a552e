// Run by prepack, after the build: the tarball must hold the code (a pack
// of README.md and package.json alone installed without error and failed
// at import: issue 60). Fails the pack when a file the package exports is
// missing.
import { existsSync, readFileSync } from "node:fs";

const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url)));
const files = [pkg.main, pkg.module, pkg.types];
for (const cond of Object.values(pkg.exports["."])) {
  files.push(cond.types, cond.default);
}
const missing = files.filter((f) => !existsSync(new URL("../" + f, import.meta.url)));
if (missing.length > 0) {
  console.error(`npm pack: the package would miss ${missing.join(", ")}: the build did not make them`);
  process.exit(1);
}
