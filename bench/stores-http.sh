#!/usr/bin/env bash
# /api/segment/get/{key} throughput with each store behind frond, one after
# the other in one run: the store is off the hot path, so they should match.
# Stores come from the FROND_TEST_* variables (.ci/services.sh sets them).
# Usage: bench/stores-http.sh [seconds per run]     (needs wrk)
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}
out=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; wait 2>/dev/null; rm -rf "$out"' EXIT
go build -o "$out/frond" ./cmd/frond
declare -A stores=([sqlite]="sqlite://$out/frond.db")
[ -n "${FROND_TEST_MYSQL_URL:-}" ] && stores[mysql]=$FROND_TEST_MYSQL_URL
[ -n "${FROND_TEST_POSTGRES_URL:-}" ] && stores[postgres]=$FROND_TEST_POSTGRES_URL
[ -n "${FROND_TEST_REDIS_URL:-}" ] && stores[redis]="$FROND_TEST_REDIS_URL?frond_allow_volatile=true&frond_prefix=frondhttp:"
[ -n "${FROND_TEST_ETCD_ENDPOINTS:-}" ] && stores[etcd]="etcd://$FROND_TEST_ETCD_ENDPOINTS?frond_prefix=/frondhttp/"
tag="http-$(date +%s)"
for name in sqlite mysql postgres redis etcd; do
  [ -n "${stores[$name]:-}" ] || continue
  rm -rf "$out/data"
  "$out/frond" serve --data-dir "$out/data" --http-addr 127.0.0.1:18083 --store "${stores[$name]}" --log-level warn 2>"$out/$name.log" &
  pid=$!
  for _ in $(seq 100); do curl -sf http://127.0.0.1:18083/healthz >/dev/null && break; sleep 0.1; done
  curl -sf -X POST http://127.0.0.1:18083/v1/tags -d "{\"name\":\"$tag\",\"step\":1000}" >/dev/null
  curl -sf "http://127.0.0.1:18083/api/segment/get/$tag" >/dev/null
  wrk -t1 -c32 -d"${secs}s" -s bench/percentiles.lua "http://127.0.0.1:18083/api/segment/get/$tag" > "$out/wrk.txt"
  read -r _ p50 p99 p999 pmax < <(grep '^PCT' "$out/wrk.txt")
  printf '%-9s rps %-10s p50 %6sus  p99 %6sus  p99.9 %6sus  non-2xx %s\n' "$name" \
    "$(awk '/Requests\/sec/ {print $2}' "$out/wrk.txt")" "$p50" "$p99" "$p999" "$(awk '/Non-2xx/ {print $5}' "$out/wrk.txt")"
  kill "$pid"; wait "$pid" 2>/dev/null || true
done
