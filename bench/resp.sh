#!/usr/bin/env bash
# RESP throughput and latency of frond's INCR against a trivial redcon server
# answering a constant integer, in the same run: redis-benchmark (Debian's
# redis-tools), 32 connections, one INCR per round trip, then pipelined.
# Usage: bench/resp.sh [requests per run] [rounds] [pipeline depth]
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-500000}
rounds=${2:-3}
depth=${3:-16}
out=$(mktemp -d)
go build -o "$out/frond" ./cmd/frond
go build -o "$out/trivial" ./bench/trivial
"$out/frond" serve --data-dir "$out/data" --http-addr 127.0.0.1:18081 --resp-addr 127.0.0.1:16381 --log-level warn 2>"$out/frond.log" &
frond_pid=$!
"$out/trivial" -proto resp -addr 127.0.0.1:16382 &
trivial_pid=$!
trap 'kill $frond_pid $trivial_pid 2>/dev/null; wait 2>/dev/null; rm -rf "$out"' EXIT
for i in $(seq 50); do redis-cli -p 16381 PING >/dev/null 2>&1 && redis-cli -p 16382 PING >/dev/null 2>&1 && break; sleep 0.1; done
curl -sf -X POST http://127.0.0.1:18081/v1/tags -d '{"name":"bench","step":1000000}' >/dev/null
redis-cli -p 16381 INCR bench >/dev/null

run() { # name port pipeline requests
  redis-benchmark -p "$2" -c 32 -n "$4" -P "$3" --precision 3 INCR bench > "$out/rb.txt" 2>&1
  rps=$(awk '/throughput summary/ {print $3}' "$out/rb.txt")
  read -r p50 p99 < <(awk '/avg +min +p50/ {getline; print $3, $5}' "$out/rb.txt")
  p999=$(awk '/^[0-9.]+% <= / {sub("%","",$1); if ($1+0 >= 99.9) {print $3; exit}}' "$out/rb.txt")
  errs=$(grep -c -- '^-\|ERR' "$out/rb.txt" || true)
  printf '%-8s -P %-3s round %s  %12s IDs/s  p50 %6s ms  p99 %6s ms  p99.9 %6s ms  error lines %s\n' \
    "$1" "$3" "$r" "$rps" "$p50" "$p99" "$p999" "$errs"
}

for r in $(seq "$rounds"); do
  run trivial 16382 1 "$n"
  run frond   16381 1 "$n"
  run trivial 16382 "$depth" "$((n * 8))"
  run frond   16381 "$depth" "$((n * 8))"
done
