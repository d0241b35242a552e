#!/usr/bin/env bash
# A Node.js program outside the repository (.ci/npmget/main.mjs) in a
# project that installs the packed tarball alone (npm pack; the package
# has no dependency), run against a running frond serve (issue 46).
set -euo pipefail
cd "$(dirname "$0")"
bin="${FROND_TEST_BIN:?FROND_TEST_BIN: a frond binary}"
work="$(mktemp -d)"
pid=""
# The server stopped and waited for (it writes its data directory as it
# stops) before the directory goes; the script's status is its own.
cleanup() {
  local rc=$?
  if [ -n "$pid" ]; then
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  rm -rf "$work" || true
  exit "$rc"
}
trap cleanup EXIT
npm run build >/dev/null
tarball="$(npm pack --silent --pack-destination "$work")"
mkdir "$work/use"
cp ../../.ci/npmget/main.mjs "$work/use/"
(cd "$work/use" && npm init -y >/dev/null && npm install --no-audit --no-fund "$work/$tarball" >/dev/null)
"$bin" serve --data-dir "$work/data" --http-addr 127.0.0.1:0 --log-format json 2>"$work/serve.log" &
pid=$!
addr=""
for _ in $(seq 100); do
  addr="$(sed -n 's/.*"msg":"frond listening","addr":"\([^"]*\)".*/\1/p' "$work/serve.log")"
  [ -n "$addr" ] && break
  sleep 0.2
done
[ -n "$addr" ] || { cat "$work/serve.log"; exit 1; }
(cd "$work/use" && node main.mjs "$addr")
