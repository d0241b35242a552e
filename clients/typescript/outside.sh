#!/usr/bin/env bash
# A Node.js program outside the repository (.ci/npmget/main.mjs) in a
# project that installs the packed tarball alone (npm pack; the package
# has no dependency), run against a running frond serve (issue 46).
set -euo pipefail
cd "$(dirname "$0")"
bin="${FROND_TEST_BIN:?FROND_TEST_BIN: a frond binary}"
. ../../.ci/frond.sh
npm run build >/dev/null
tarball="$(npm pack --silent --pack-destination "$work")"
mkdir "$work/use"
cp ../../.ci/npmget/main.mjs "$work/use/"
(cd "$work/use" && npm init -y >/dev/null && npm install --no-audit --no-fund "$work/$tarball" >/dev/null)
frond_start "$bin"
addr="$(frond_addr)"
(cd "$work/use" && node main.mjs "$addr")
