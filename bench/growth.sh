#!/usr/bin/env bash
# How one node grows with the tags in use (issue 34): for each count of
# tags, a fresh frond serve (embedded SQLite), the tags created and every
# one used by frond bench over HTTP, the load spread over all of them; then
# the server's RSS, a /metrics scrape (bytes, time), a dashboard snapshot
# (bytes) and /readyz (bytes), and the p50/p99 of the IDs.
# Usage: bench/growth.sh [seconds measured] [tag counts...]
# (default: 10 s; 1 1000 10000 100000)
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}
shift || true
counts=("$@")
[[ ${#counts[@]} -gt 0 ]] || counts=(1 1000 10000 100000)
out=$(mktemp -d)
pid=
trap 'kill $pid 2>/dev/null; wait 2>/dev/null; rm -rf "$out"' EXIT
go build -o "$out/frond" ./cmd/frond
printf '%-8s %-9s %-15s %-13s %-15s %-12s %-10s %-10s %s\n' tags "RSS MB" "/metrics bytes" "scrape ms" "dashboard bytes" "readyz bytes" "p50 ms" "p99 ms" "IDs/s"
for n in "${counts[@]}"; do
	rm -rf "$out/data"
	"$out/frond" serve --data-dir "$out/data" --http-addr 127.0.0.1:18600 --log-level warn 2>"$out/log" &
	pid=$!
	for _ in $(seq 100); do curl -sf http://127.0.0.1:18600/healthz >/dev/null && break; sleep 0.1; done
	# Warm-up long enough for every tag to be used at least once.
	warm=$(( n / 3000 + 2 ))
	"$out/frond" bench --json --protocol http --server http://127.0.0.1:18600 --tag tenant --tags "$n" --create-tags \
		--duration "${secs}s" --warmup "${warm}s" >"$out/bench.json" 2>"$out/bench.err" || { cat "$out/bench.err"; exit 1; }
	read -r mbytes mtime < <(curl -sf -o /dev/null -w '%{size_download} %{time_total}\n' http://127.0.0.1:18600/metrics)
	dbytes=$(curl -sfN --max-time 3 http://127.0.0.1:18600/ui/events 2>/dev/null | awk '/^data: / {print length($0) - 6; exit}' || true)
	rbytes=$(curl -s http://127.0.0.1:18600/readyz | wc -c)
	rss=$(awk '/VmRSS/ {printf "%.1f", $2 / 1024}' /proc/$pid/status)
	python3 - "$n" "$rss" "$mbytes" "$mtime" "$dbytes" "$rbytes" "$out/bench.json" <<'PY'
import json, sys
n, rss, mb, mt, db, rb, f = sys.argv[1:]
r = json.load(open(f))
print(f"{n:<8} {rss:<9} {mb:<15} {float(mt) * 1000:<13.1f} {db:<15} {rb:<12} {r['latency_us']['p50'] / 1000:<10.2f} {r['latency_us']['p99'] / 1000:<10.2f} {r['ids_per_second']:.0f}")
PY
	kill $pid
	wait $pid 2>/dev/null || true
done
