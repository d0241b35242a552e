#!/usr/bin/env bash
# Sequence tags against segment tags, in the same run: frond bench over gRPC
# with 1, 8 and 64 callers, on each store in turn (SQLite, and PostgreSQL,
# MariaDB, Redis and etcd when FROND_TEST_POSTGRES_URL, FROND_TEST_MYSQL_URL,
# FROND_TEST_REDIS_URL and FROND_TEST_ETCD_ENDPOINTS are set, as
# .ci/services.sh exports them). Prints one line per run and the group
# commit's counters.
# Usage: bench/sequence.sh [seconds per run]
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-4}
out=$(mktemp -d)
go build -o "$out/frond" ./cmd/frond
pid=""
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; wait 2>/dev/null; rm -rf "$out"' EXIT
stores=("sqlite://$out/frond.db")
[ -n "${FROND_TEST_POSTGRES_URL:-}" ] && stores+=("$FROND_TEST_POSTGRES_URL")
[ -n "${FROND_TEST_MYSQL_URL:-}" ] && stores+=("$FROND_TEST_MYSQL_URL")
# The test Redis keeps nothing on disk: accepted here, for a measurement.
[ -n "${FROND_TEST_REDIS_URL:-}" ] && stores+=("${FROND_TEST_REDIS_URL%%\?*}?frond_allow_volatile=true&frond_prefix=benchseq:")
[ -n "${FROND_TEST_ETCD_ENDPOINTS:-}" ] && stores+=("etcd://${FROND_TEST_ETCD_ENDPOINTS%%,*}?frond_prefix=/benchseq/")
for store in "${stores[@]}"; do
  rm -rf "$out/data"
  "$out/frond" serve --data-dir "$out/data" --http-addr 127.0.0.1:18083 --grpc-addr 127.0.0.1:19093 --store "$store" --log-level warn 2>"$out/frond.log" &
  pid=$!
  for i in $(seq 100); do curl -fs 127.0.0.1:18083/readyz/segment >/dev/null && break; sleep 0.1; done
  t=$(date +%s%N)
  curl -fs -XPOST 127.0.0.1:18083/v1/tags -d "{\"name\":\"seg$t\",\"step\":1000}" >/dev/null
  curl -fs -XPOST 127.0.0.1:18083/v1/tags -d "{\"name\":\"seq$t\",\"step\":1,\"mode\":\"sequence\"}" >/dev/null
  for c in 1 8 64; do
    for tag in "seg$t" "seq$t"; do
      "$out/frond" bench --protocol grpc --server 127.0.0.1:19093 --tag "$tag" --concurrency $c --connections 4 \
        --duration "${secs}s" --warmup 1s --json |
        python3 -c 'import json,sys; d=json.load(sys.stdin); print("%-10s %-7s callers %2s  %8.0f IDs/s  p50 %6.0f us  p99 %6.0f us  duplicates %d" % (sys.argv[1], sys.argv[2], sys.argv[3], d["ids_per_second"], d["latency_us"]["p50"], d["latency_us"]["p99"], d["duplicates"]))' \
        "${store%%:*}" "${tag:0:3}" "$c"
    done
  done
  curl -fs 127.0.0.1:18083/metrics | grep -E '^frond_sequence_(store_calls_total|max_group)' || true
  kill $pid; wait $pid 2>/dev/null || true; pid=""
done
