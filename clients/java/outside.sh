#!/usr/bin/env bash
# A Java program outside the repository (.ci/javaget/Main.java), compiled
# and run against the built jar alone and a running frond serve, as a user's
# program would be (issue 45).
set -euo pipefail
cd "$(dirname "$0")"
jar="$PWD/build/frond-client.jar"
bin="${FROND_TEST_BIN:-$PWD/build/frond}"
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
cp ../../.ci/javaget/Main.java "$work/"
"$bin" serve --data-dir "$work/data" --http-addr 127.0.0.1:0 --log-format json 2>"$work/serve.log" &
pid=$!
addr=""
for _ in $(seq 100); do
  addr="$(sed -n 's/.*"msg":"frond listening","addr":"\([^"]*\)".*/\1/p' "$work/serve.log")"
  [ -n "$addr" ] && break
  sleep 0.2
done
[ -n "$addr" ] || { cat "$work/serve.log"; exit 1; }
(cd "$work" && javac -cp "$jar" Main.java && java -cp "$jar:." Main "$addr")
