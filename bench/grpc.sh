#!/usr/bin/env bash
# gRPC throughput and latency of frond's NextSegment against a trivial
# grpc-go server of the same service answering constant IDs, in the same
# run: bench/grpcload, 32 callers on 4 connections, one ID per call, then
# batches of 1,000.
# Usage: bench/grpc.sh [seconds per run] [rounds]
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}
rounds=${2:-3}
out=$(mktemp -d)
go build -o "$out/frond" ./cmd/frond
go build -o "$out/trivial" ./bench/trivial
go build -o "$out/grpcload" ./bench/grpcload
"$out/frond" serve --data-dir "$out/data" --http-addr 127.0.0.1:18081 --grpc-addr 127.0.0.1:19091 --log-level warn 2>"$out/frond.log" &
frond_pid=$!
"$out/trivial" -proto grpc -addr 127.0.0.1:19092 &
trivial_pid=$!
trap 'kill $frond_pid $trivial_pid 2>/dev/null; wait 2>/dev/null; rm -rf "$out"' EXIT
for i in $(seq 50); do curl -sf http://127.0.0.1:18081/healthz >/dev/null && break; sleep 0.1; done
curl -sf -X POST http://127.0.0.1:18081/v1/tags -d '{"name":"bench","step":1000000}' >/dev/null

for r in $(seq "$rounds"); do
  for n in 1 1000; do
    printf 'trivial n=%-5s round %s  ' "$n" "$r"; "$out/grpcload" -addr 127.0.0.1:19092 -d "${secs}s" -n "$n"
    printf 'frond   n=%-5s round %s  ' "$n" "$r"; "$out/grpcload" -addr 127.0.0.1:19091 -d "${secs}s" -n "$n"
  done
done
