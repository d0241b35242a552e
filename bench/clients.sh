#!/usr/bin/env bash
# Every client's cost of an ID from its lease, against its own language's
# counter, in one run on one machine: the four benchmarks one after another,
# PASSES times over (interleaved, so that a slow minute of the machine falls
# on every client alike), then one table (docs/clients.md's figures come
# from it; a benchmark reports, it gates nothing).
#
#   bash bench/clients.sh [PASSES]      3 when not given; about 2 minutes a pass
#   bash bench/clients.sh --quick       one short pass (CI's: every benchmark runs and its
#                                       output still parses; its figures mean little)
#
#   Go          go test -bench 'AtomicAdd|Client_(TagNext|Next|NextShard|NextForKey)$' ./client
#   Java        clients/java/build.sh bench "${java[@]}"
#   TypeScript  node clients/typescript/bench/bench.mjs 9 2000000
#   Python      python3 clients/python/bench.py "${python[@]}" ids
#
# Output in $CLIENTS_OUT (clients-out/ when not set): pass-N-LANG.txt, each
# benchmark's own output, and summary.md (bench/clients/summary.py). Needs
# Go, Java 11+ (javac), Node.js 18+ with npm (npm ci: the registry or its
# cache) and python3; frond is built once (FROND_TEST_BIN to use another).
set -euo pipefail
cd "$(dirname "$0")/.."
passes="${1:-3}"
go_time=1s java=(9 20000000) ts=(9 2000000) ts_genes=(9 1000000) python=(5 1000000) python_genes=(5 300000)
if [ "$passes" = --quick ]; then
  passes=1 go_time=20000x java=(3 200000) ts=(3 200000) ts_genes=(3 100000) python=(3 100000) python_genes=(3 20000)
fi
out="${CLIENTS_OUT:-clients-out}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
rm -f "$out"/pass-*.txt "$out/summary.md"
if [ -z "${FROND_TEST_BIN:-}" ]; then
  FROND_TEST_BIN="$(mktemp -d)/frond"
  go build -o "$FROND_TEST_BIN" ./cmd/frond
fi
export FROND_TEST_BIN
py="${PYTHON:-python3}"
(cd clients/typescript && { [ -d node_modules ] || npm ci --no-audit --no-fund >&2; } && npm run --silent build >&2)
bash clients/java/build.sh jar >&2
go test -c -o "$out/client.test" ./client
{
  echo "date: $(date -u +%Y-%m-%dT%H:%MZ)"
  echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo ' (modified)')"
  echo "cpus: $(nproc); $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
  echo "load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "go: $(go env GOVERSION); java: $(java -version 2>&1 | head -1); node: $(node --version); python: $("$py" --version 2>&1)"
} > "$out/machine.txt"
cat "$out/machine.txt" >&2
for p in $(seq 1 "$passes"); do
  echo "== pass $p of $passes" >&2
  (cd client && "$out/client.test" -test.run '^$' -test.bench 'BenchmarkAtomicAdd$|BenchmarkClient_(TagNext|Next|NextShard|NextForKey)$' -test.benchtime "$go_time") > "$out/pass-$p-go.txt"
  bash clients/java/build.sh bench "${java[@]}" 2>&1 | grep -v '^built ' > "$out/pass-$p-java.txt"
  (cd clients/typescript && node bench/bench.mjs "${ts[@]}") > "$out/pass-$p-typescript.txt"
  (cd clients/typescript && node bench/shard.mjs "${ts_genes[@]}") > "$out/pass-$p-typescript-genes.txt"
  PYTHONDONTWRITEBYTECODE=1 "$py" clients/python/bench.py "${python[@]}" ids > "$out/pass-$p-python.txt"
  PYTHONDONTWRITEBYTECODE=1 "$py" clients/python/bench.py "${python_genes[@]}" genes > "$out/pass-$p-python-genes.txt"
  tail -q -n +1 "$out/pass-$p-"*.txt >&2
done
"$py" bench/clients/summary.py "$out" > "$out/summary.md"
cat "$out/summary.md"
