#!/usr/bin/env bash
# frond bench over every protocol, against frond serve and against the
# trivial server of the same protocol, in the same rounds.
# Usage: bench/protocols.sh [seconds per run] [rounds] [concurrency]
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-5}
rounds=${2:-3}
conc=${3:-32}
out=$(mktemp -d)
go build -o "$out/frond" ./cmd/frond
go build -o "$out/trivial" ./bench/trivial
"$out/frond" serve --data-dir "$out/data" --http-addr 127.0.0.1:18081 --grpc-addr 127.0.0.1:19091 --resp-addr 127.0.0.1:16381 --log-level warn 2>"$out/frond.log" &
pids=$!
"$out/trivial" -proto http -addr 127.0.0.1:18082 & pids="$pids $!"
"$out/trivial" -proto grpc -addr 127.0.0.1:19092 & pids="$pids $!"
"$out/trivial" -proto resp -addr 127.0.0.1:16382 & pids="$pids $!"
trap 'kill $pids 2>/dev/null; wait 2>/dev/null; rm -rf "$out"' EXIT
for port in 18081 18082 19092 16382; do
  for i in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.1; done
done
for i in $(seq 50); do curl -sf http://127.0.0.1:18081/healthz >/dev/null && break; sleep 0.1; done
curl -sf -X POST http://127.0.0.1:18081/v1/tags -d '{"name":"bench","step":100000}' >/dev/null

b() { # label protocol server [flags...]
  local label=$1 proto=$2 server=$3; shift 3
  if ! "$out/frond" bench --json --protocol "$proto" --server "$server" --duration "${secs}s" --warmup 1s \
      --concurrency "$conc" "$@" >"$out/bench.json" 2>"$out/bench.err"; then
    echo "$label: frond bench failed:"; cat "$out/bench.err"; return
  fi
  python3 - "$label" "$r" "$out/bench.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[3])); l = r["latency_us"]
print("%-22s round %s  ids/s %12.0f  req/s %10.0f  p50 %6dus p90 %6dus p99 %6dus p99.9 %6dus max %7dus  errors %d dup %d" % (
    sys.argv[1], sys.argv[2], r["ids_per_second"], r["requests_per_second"], l["p50"], l["p90"], l["p99"], l["p999"], l["max"],
    sum(r["errors"].values()), r["duplicates"]))
PY
}

for r in $(seq "$rounds"); do
  b "trivial http (leaf)"  leaf http://127.0.0.1:18082
  b "frond leaf"           leaf http://127.0.0.1:18081
  b "frond http /v1"       http http://127.0.0.1:18081
  b "trivial grpc"         grpc 127.0.0.1:19092
  b "frond grpc"           grpc 127.0.0.1:19091
  b "trivial grpc n=1000"  grpc 127.0.0.1:19092 --batch 1000
  b "frond grpc n=1000"    grpc 127.0.0.1:19091 --batch 1000
  b "trivial resp"         resp 127.0.0.1:16382
  b "frond resp"           resp 127.0.0.1:16381
  b "frond client library" client 127.0.0.1:19091
done
