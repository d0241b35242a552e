#!/usr/bin/env bash
# Keyed sequences over HTTP against the trivial net/http handler, in the
# same run, rounds alternating (docs/sequences.md#measured): wrk asks
# GET /v1/seq/bench/{key} of one frond serve (the embedded SQLite, one
# space of 1,024 sections) for random keys out of KEYS (default 100,000),
# and GET / of bench/trivial; it prints each round and the median ratio.
# Both get the same requests, from the same wrk script.
# Environment: SECS (seconds per wrk run, default 3), ROUNDS (default 5),
# KEYS. Needs wrk (apt-get install wrk).
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${SECS:-3}
rounds=${ROUNDS:-5}
keys=${KEYS:-100000}
out=$(mktemp -d)
pids=()
cleanup() {
	kill "${pids[@]}" 2>/dev/null || true
	wait 2>/dev/null || true
	rm -rf "$out"
}
trap cleanup EXIT
go build -o "$out/frond" ./cmd/frond
go build -o "$out/trivial" ./bench/trivial
"$out/frond" serve --data-dir "$out/d" --http-addr 127.0.0.1:18191 --log-level warn 2>"$out/frond.log" &
pids+=($!)
"$out/trivial" -proto http -addr 127.0.0.1:18190 &
pids+=($!)
for _ in $(seq 100); do curl -sf http://127.0.0.1:18191/healthz >/dev/null && curl -sf http://127.0.0.1:18190/ >/dev/null && break; sleep 0.1; done
curl -sf -X POST http://127.0.0.1:18191/v1/spaces -d '{"name":"bench"}' >/dev/null
cat >"$out/keys.lua" <<LUA
math.randomseed(os.time())
request = function()
  return wrk.format("GET", "/v1/seq/bench/conversation-" .. math.random(1, $keys))
end
LUA
# Every section loaded before the rounds (its first raise).
wrk -t2 -c32 -d2s -s "$out/keys.lua" http://127.0.0.1:18191 >/dev/null
# The same requests to both (the trivial server answers any path), so
# that wrk's script costs both sides alike.
rps() { wrk -t2 -c32 -d"${secs}s" -s "$out/keys.lua" "http://127.0.0.1:$1" | awk '/Requests\/sec/ {print $2}'; }
printf 'wrk -t2 -c32 -d%ss, %s keys, %s rounds\n' "$secs" "$keys" "$rounds"
ratios=""
for r in $(seq "$rounds"); do
	t=$(rps 18190)
	k=$(rps 18191)
	ratios+="$(awk -v k="$k" -v t="$t" 'BEGIN {printf "%.3f", k/t}') "
	echo "round $r  trivial $t  keyseq $k"
done
median() { tr ' ' '\n' | grep . | sort -n | awk '{v[NR]=$1} END {print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }
echo "ratio to trivial (median): $(median <<<"$ratios")"
grep -c '"level":"ERROR"\|level=ERROR' "$out/frond.log" >/dev/null && { echo "frond logged errors:"; grep 'ERROR' "$out/frond.log" | head -5; } || true
