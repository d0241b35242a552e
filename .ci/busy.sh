#!/usr/bin/env bash
# The tests that run in real time (listeners, leases, timeouts, the real
# servers), again on a busy machine (issue 44, item 3): a newcomer's
# `go test -race ./...` failed on a 2-core machine at load 10-19 while each
# test passed alone. Four processes that keep a core busy each run beside
# `go test -race -count=2`; any failure fails CI.
#
#   bash .ci/busy.sh [PACKAGES...]
set -euo pipefail
cd "$(dirname "$0")/.."
pkgs=("$@")
if [ ${#pkgs[@]} -eq 0 ]; then
  # Every package a plain go test ./... runs (the README's command): a
  # newcomer's first run is on a loaded laptop (issue 60).
  pkgs=(./...)
fi
hogs=()
stop() { [ ${#hogs[@]} -eq 0 ] || kill "${hogs[@]}" 2>/dev/null || true; }
trap stop EXIT
for _ in 1 2 3 4; do
  ( while :; do :; done ) &
  hogs+=($!)
done
echo "busy: ${#hogs[@]} processes spinning on $(nproc) cores; go test -race -count=2 ${pkgs[*]}"
go test -race -count=2 "${pkgs[@]}"
