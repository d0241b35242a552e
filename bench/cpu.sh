#!/usr/bin/env bash
# The CPU one request costs frond against the trivial server of the same
# protocol, at a fixed rate (open loop, frond bench): the server process's
# user + system time over the run, divided by the requests, ROUNDS times,
# frond and the trivial server in turn. What frond adds above the trivial
# server is frond's (validation, the engine, metrics, the access path); the
# rest is net/http and the machine's wake-ups. A benchmark reports: it gates
# nothing.
#
#   bash bench/cpu.sh [RATE] [SECONDS] [ROUNDS]     2000 10 3 when not given
#
# frond runs on its embedded SQLite store in a temporary data directory,
# over Leaf's HTTP API (GET /api/segment/get/order), a tag of step 100,000.
set -euo pipefail
cd "$(dirname "$0")/.."
rate="${1:-2000}" secs="${2:-10}" rounds="${3:-3}"
work="$(mktemp -d)"
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
go build -o "$work/frond" ./cmd/frond
go build -o "$work/trivial" ./bench/trivial
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
fport="$(free_port)" tport="$(free_port)"
"$work/frond" serve --data-dir "$work/data" --http-addr "127.0.0.1:$fport" --grpc-addr "" > "$work/frond.log" 2>&1 &
fpid=$!
"$work/trivial" -proto http -addr "127.0.0.1:$tport" > /dev/null 2>&1 &
tpid=$!
for _ in $(seq 50); do
  curl -sf "http://127.0.0.1:$fport/healthz" > /dev/null && curl -s "http://127.0.0.1:$tport/" > /dev/null && break
  sleep 0.2
done
"$work/frond" tag create order --step 100000 --server "http://127.0.0.1:$fport" > /dev/null
tck="$(getconf CLK_TCK)"
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; } # utime + stime, in ticks
echo "CPU per request at $rate requests/s, $secs s a run; $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg) at start"
for r in $(seq "$rounds"); do
  line="round $r:"
  for who in frond trivial; do
    if [ "$who" = frond ]; then pid=$fpid port=$fport; else pid=$tpid port=$tport; fi
    a="$(cpu "$pid")"
    out="$("$work/frond" bench --protocol leaf --server "http://127.0.0.1:$port" --tag order --rate "$rate" --duration "${secs}s" --json)"
    b="$(cpu "$pid")"
    n="$(python3 -c 'import json, sys; r = json.load(sys.stdin); print(r["requests"] + r.get("warmup_ids", 0))' <<< "$out" 2>/dev/null || echo 0)"
    [ "$n" -gt 0 ] || n=$((rate * secs))
    line="$line $who $(( (b - a) * 1000000 / tck / n )) us"
  done
  echo "$line"
done
