#!/usr/bin/env bash
# A Python program outside the repository (.ci/pyget/main.py) in a fresh
# virtual environment that installs the built wheel alone (build.sh; the
# package has no dependency), then on PYTHONPATH=src without any install,
# against a running frond serve (issues 61, 72).
set -euo pipefail
cd "$(dirname "$0")"
bin="${FROND_TEST_BIN:?FROND_TEST_BIN: a frond binary}"
py="${PYTHON:-/usr/bin/python3}"
. ../../.ci/frond.sh
wheel="$(bash build.sh)"
"$py" -m venv "$work/venv"
"$work/venv/bin/pip" install --quiet --no-index --no-deps "$wheel"
mkdir "$work/use"
cp ../../.ci/pyget/main.py "$work/use/"
frond_start "$bin"
addr="$(frond_addr)"
(cd "$work/use" && "$work/venv/bin/python" main.py "http://$addr")
# The route that always works (docs/clients.md#python): no install at all,
# the source on PYTHONPATH, the machine's Python without its user site;
# against a fresh server (the program creates its tags).
kill "$frond_pid"
wait "$frond_pid" 2>/dev/null || true
rm -rf "$work/data"
frond_start "$bin"
addr="$(frond_addr)"
src="$PWD/src"
(cd "$work/use" && PYTHONPATH="$src" "$py" -s main.py "http://$addr")
rm -rf dist
