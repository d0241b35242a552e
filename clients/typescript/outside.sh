#!/usr/bin/env bash
# A Node.js program outside the repository (.ci/npmget/main.mjs) in a
# project that installs the packed tarball alone (npm pack; the package
# has no dependency), run against a running frond serve (issue 46).
set -euo pipefail
cd "$(dirname "$0")"
bin="${FROND_TEST_BIN:?FROND_TEST_BIN: a frond binary}"
. ../../.ci/frond.sh
# Exactly the documented command (docs/clients.md: npm pack in
# clients/typescript), from a tree with nothing built: the pack builds the
# package (prepack) or fails (issue 60: it packed README.md and
# package.json alone, which installed without error and failed at import).
rm -rf dist LICENSE
tarball="$(npm pack --silent | tail -1)"
mv "$tarball" "$work/"
list="$(tar -tzf "$work/$tarball")"
for f in package/dist/esm/index.js package/dist/cjs/index.js package/dist/esm/index.d.ts package/LICENSE; do
  grep -qx "$f" <<<"$list" || { echo "the packed tarball has no $f"; exit 1; }
done
mkdir "$work/use"
cp ../../.ci/npmget/main.mjs "$work/use/"
(cd "$work/use" && npm init -y >/dev/null && npm install --no-audit --no-fund "$work/$tarball" >/dev/null)
frond_start "$bin"
addr="$(frond_addr)"
(cd "$work/use" && node main.mjs "$addr")
