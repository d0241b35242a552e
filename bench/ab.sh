#!/usr/bin/env bash
# Same-run A/B of segment IDs at two or more commits against a trivial
# server: Leaf's HTTP endpoint against a trivial net/http handler (wrk), or
# RESP's INCR pipelined against a trivial redcon server (redis-benchmark).
# Every frond build and the trivial server run at once, and the rounds
# alternate between them, so that the machine's noise falls on all of them
# alike. It prints each round and, per commit, the
# median ratio to trivial and the median of the per-round ratio to the first
# commit (paired, the steadier figure: compare ratios, not absolute rates).
# Usage: bench/ab.sh COMMIT_A COMMIT_B [COMMIT ...]
# Environment: PROTO (http, the default, or resp), ROUNDS (default 5);
# for http SECS (seconds per wrk run, default 3); for resp N (commands per
# run, default 2,000,000), DEPTH (the pipeline, default 16) and CMD (the
# command, default "INCR bench"; "SNOWFLAKE" for snowflake IDs).
# The older form bench/ab-http.sh A B SECS ROUNDS still works.
# (needs wrk or redis-benchmark: apt-get install wrk redis-tools; builds each
# commit in a git worktree)
set -euo pipefail
cd "$(dirname "$0")/.."
proto=${PROTO:-http}
secs=${SECS:-3}
rounds=${ROUNDS:-5}
n=${N:-2000000}
depth=${DEPTH:-16}
cmd=${CMD:-INCR bench}
[[ $proto == http || $proto == resp ]] || { echo "PROTO=$proto: http or resp" >&2; exit 2; }
commits=()
for arg in "$@"; do
	if [[ ${#commits[@]} -ge 2 && $arg =~ ^[0-9]+$ ]]; then
		# the older positional SECS ROUNDS
		if [[ -z ${_secs_set:-} ]]; then secs=$arg _secs_set=1; else rounds=$arg; fi
	else
		commits+=("$arg")
	fi
done
[[ ${#commits[@]} -ge 2 ]] || { echo "usage: $0 COMMIT_A COMMIT_B [COMMIT ...]" >&2; exit 2; }
out=$(mktemp -d)
pids=()
cleanup() {
	kill "${pids[@]}" 2>/dev/null || true
	wait 2>/dev/null || true
	for i in "${!commits[@]}"; do git worktree remove --force "$out/w$i" 2>/dev/null || true; done
	rm -rf "$out"
}
trap cleanup EXIT
for i in "${!commits[@]}"; do
	git worktree add -q --detach "$out/w$i" "${commits[$i]}"
	(cd "$out/w$i" && go build -o "$out/frond$i" ./cmd/frond)
done
go build -o "$out/trivial" ./bench/trivial
for i in "${!commits[@]}"; do
	"$out/frond$i" serve --data-dir "$out/d$i" --http-addr "127.0.0.1:$((18181 + i))" --resp-addr "127.0.0.1:$((16481 + i))" --log-level warn 2>"$out/$i.log" &
	pids+=($!)
done
if [[ $proto == http ]]; then
	"$out/trivial" -proto http -addr 127.0.0.1:18180 &
else
	"$out/trivial" -proto resp -addr 127.0.0.1:16480 &
fi
pids+=($!)
for i in "${!commits[@]}"; do
	port=$((18181 + i))
	for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
	curl -sf -X POST "http://127.0.0.1:$port/v1/tags" -d '{"name":"bench","step":100000}' >/dev/null
	curl -sf "http://127.0.0.1:$port/api/segment/get/bench" >/dev/null
done
if [[ $proto == http ]]; then
	for _ in $(seq 100); do curl -sf http://127.0.0.1:18180/ >/dev/null && break; sleep 0.1; done
	rps() { wrk -t2 -c32 -d"${secs}s" "http://127.0.0.1:$((18180 + $1))/api/segment/get/bench" | awk '/Requests\/sec/ {print $2}'; }
	how="wrk -t2 -c32 -d${secs}s"
else
	for _ in $(seq 100); do redis-cli -p 16480 PING >/dev/null 2>&1 && break; sleep 0.1; done
	# shellcheck disable=SC2086 # cmd is words
	rps() { redis-benchmark -p "$((16480 + $1))" -c 32 -n "$n" -P "$depth" $cmd 2>&1 | awk '/throughput summary/ {print $3}'; }
	how="redis-benchmark -c 32 -n $n -P $depth $cmd"
fi
names=()
for c in "${commits[@]}"; do names+=("$(git rev-parse --short "$c")"); done
printf 'commits %s: %s, %s rounds\n' "${names[*]}" "$how" "$rounds"
declare -A ratio pair
for r in $(seq "$rounds"); do
	t=$(rps 0)
	line="round $r  trivial $t"
	first=
	for i in "${!commits[@]}"; do
		x=$(rps $((i + 1)))
		[[ -n $first ]] || first=$x
		ratio[$i]+="$(awk -v x="$x" -v t="$t" 'BEGIN {printf "%.3f", x/t}') "
		pair[$i]+="$(awk -v x="$x" -v f="$first" 'BEGIN {printf "%.3f", x/f}') "
		line+="  ${names[$i]} $x"
	done
	echo "$line"
done
median() { tr ' ' '\n' | grep . | sort -n | awk '{v[NR]=$1} END {print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }
printf '%-10s %-18s %s\n' commit "ratio to trivial" "ratio to ${names[0]} (paired)"
for i in "${!commits[@]}"; do
	printf '%-10s %-18s %s\n' "${names[$i]}" "$(median <<<"${ratio[$i]}")" "$(median <<<"${pair[$i]}")"
done
