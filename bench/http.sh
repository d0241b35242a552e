#!/usr/bin/env bash
# HTTP throughput and latency of frond's Leaf endpoints against a trivial
# net/http handler, in the same run: wrk, keep-alive, 32 connections.
# Usage: bench/http.sh [seconds per run] [rounds]   (needs wrk: apt-get install wrk)
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}
rounds=${2:-3}
out=$(mktemp -d)
go build -o "$out/frond" ./cmd/frond
go build -o "$out/trivial" ./bench/trivial
"$out/frond" serve --data-dir "$out/data" --http-addr 127.0.0.1:18081 --log-level warn 2>"$out/frond.log" &
frond_pid=$!
"$out/trivial" -proto http -addr 127.0.0.1:18082 &
trivial_pid=$!
trap 'kill $frond_pid $trivial_pid 2>/dev/null; wait 2>/dev/null; rm -rf "$out"' EXIT
for i in $(seq 50); do curl -sf http://127.0.0.1:18081/healthz >/dev/null && curl -sf http://127.0.0.1:18082/ >/dev/null && break; sleep 0.1; done
curl -sf -X POST http://127.0.0.1:18081/v1/tags -d '{"name":"bench","step":10000}' >/dev/null
curl -sf http://127.0.0.1:18081/api/segment/get/bench >/dev/null

run() { # name url
  wrk -t1 -c32 -d"${secs}s" -s bench/percentiles.lua "$2" > "$out/wrk.txt"
  rps=$(awk '/Requests\/sec/ {print $2}' "$out/wrk.txt")
  read -r _ p50 p99 p999 pmax < <(grep '^PCT' "$out/wrk.txt")
  errs=$(awk '/Non-2xx/ {print $5}' "$out/wrk.txt")
  printf '%-10s round %s  rps %-10s p50 %6sus  p99 %6sus  p99.9 %6sus  max %7sus  non-2xx %s\n' \
    "$1" "$r" "$rps" "$p50" "$p99" "$p999" "$pmax" "${errs:-0}"
}

for r in $(seq "$rounds"); do
  run trivial   http://127.0.0.1:18082/api/segment/get/bench
  run segment   http://127.0.0.1:18081/api/segment/get/bench
  run snowflake http://127.0.0.1:18081/api/snowflake/get/bench
done
