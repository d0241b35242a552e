// dist/cjs holds CommonJS: a package.json there says so to Node (the
// package itself is "type": "module").
import { writeFileSync } from "node:fs";
writeFileSync(new URL("../dist/cjs/package.json", import.meta.url), JSON.stringify({ type: "commonjs" }) + "\n");
