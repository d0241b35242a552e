#!/usr/bin/env bash
# How throughput grows with nodes sharing one store (issue 34): one frond
# serve on a PostgreSQL store under frond bench over HTTP, then three nodes
# on the same store, each under its own frond bench at once; IDs/s per node
# and in all. Every process shares this machine's cores: on a small machine
# the sum is bounded by the CPU, not by the store (docs/benchmarks.md).
# Usage: bench/nodes.sh POSTGRES_URL [seconds] [tags]
set -euo pipefail
cd "$(dirname "$0")/.."
store=${1:?a postgres:// URL of a database frond may use}
secs=${2:-10}
tags=${3:-100}
out=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$out"' EXIT
go build -o "$out/frond" ./cmd/frond
start() { # i: node i on port 18700+i, worker ID i
	"$out/frond" serve --data-dir "$out/d$1" --store "$store" --node "$1" --http-addr "127.0.0.1:$((18700 + $1))" --log-level warn 2>"$out/$1.log" &
	pids+=($!)
	for _ in $(seq 100); do curl -sf "http://127.0.0.1:$((18700 + $1))/healthz" >/dev/null && break; sleep 0.1; done
}
run() { # i: frond bench against node i, JSON into $out/b$i.json
	"$out/frond" bench --json --protocol http --server "http://127.0.0.1:$((18700 + $1))" --tag node-bench --tags "$tags" \
		--create-tags --duration "${secs}s" --warmup 2s --concurrency 16 >"$out/b$1.json" 2>"$out/b$1.err"
}
ids() { python3 -c "import json,sys; print(round(json.load(open(sys.argv[1]))['ids_per_second']))" "$1"; }
start 0
run 0
one=$(ids "$out/b0.json")
start 1
start 2
run 0 & a=$!
run 1 & b=$!
run 2 & c=$!
wait $a $b $c
x=$(ids "$out/b0.json") y=$(ids "$out/b1.json") z=$(ids "$out/b2.json")
echo "one node: $one IDs/s"
echo "three nodes: $x + $y + $z = $((x + y + z)) IDs/s ($(awk -v t=$((x + y + z)) -v o="$one" 'BEGIN {printf "%.2f", t / o}') x one node)"
dups=$(cat "$out"/b*.json | python3 -c "import json,sys; print(sum(json.loads(l)['duplicates'] for l in sys.stdin if l.strip()))")
echo "duplicates within each node's answers: $dups (across nodes, tags are shared: each node's segments are its own)"
