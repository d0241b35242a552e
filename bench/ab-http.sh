#!/usr/bin/env bash
# Same-run A/B of Leaf's HTTP segment endpoint at two commits against a
# trivial net/http handler: both frond builds and the trivial server run at
# once, and wrk rounds alternate between the three, so that the machine's
# noise falls on all of them alike. It prints each round and, per commit,
# the ratio to trivial of each round (the figure to compare: a ratio, not
# an absolute rate).
# Usage: bench/ab-http.sh COMMIT_A COMMIT_B [seconds per run] [rounds]
# (needs wrk: apt-get install wrk; builds each commit in a git worktree)
set -euo pipefail
cd "$(dirname "$0")/.."
a=${1:?commit A}
b=${2:?commit B}
secs=${3:-3}
rounds=${4:-5}
out=$(mktemp -d)
pids=()
cleanup() {
	kill "${pids[@]}" 2>/dev/null || true
	wait 2>/dev/null || true
	git worktree remove --force "$out/wa" 2>/dev/null || true
	git worktree remove --force "$out/wb" 2>/dev/null || true
	rm -rf "$out"
}
trap cleanup EXIT
build() { # commit dir
	git worktree add -q --detach "$2" "$1"
	(cd "$2" && go build -o "$out/$(basename "$2")-frond" ./cmd/frond)
}
build "$a" "$out/wa"
build "$b" "$out/wb"
go build -o "$out/trivial" ./bench/trivial
"$out/wa-frond" serve --data-dir "$out/da" --http-addr 127.0.0.1:18181 --log-level warn 2>"$out/a.log" &
pids+=($!)
"$out/wb-frond" serve --data-dir "$out/db" --http-addr 127.0.0.1:18182 --log-level warn 2>"$out/b.log" &
pids+=($!)
"$out/trivial" -proto http -addr 127.0.0.1:18183 &
pids+=($!)
for port in 18181 18182; do
	for i in $(seq 100); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
	curl -sf -X POST "http://127.0.0.1:$port/v1/tags" -d '{"name":"bench","step":100000}' >/dev/null
	curl -sf "http://127.0.0.1:$port/api/segment/get/bench" >/dev/null
done
for i in $(seq 100); do curl -sf http://127.0.0.1:18183/ >/dev/null && break; sleep 0.1; done

rps() { wrk -t2 -c32 -d"${secs}s" "$1" | awk '/Requests\/sec/ {print $2}'; }
printf 'A %s, B %s: wrk -t2 -c32 -d%ss, %s rounds\n' "$(git rev-parse --short "$a")" "$(git rev-parse --short "$b")" "$secs" "$rounds"
ra=() rb=()
for r in $(seq "$rounds"); do
	t=$(rps http://127.0.0.1:18183/api/segment/get/bench)
	x=$(rps http://127.0.0.1:18181/api/segment/get/bench)
	y=$(rps http://127.0.0.1:18182/api/segment/get/bench)
	ra+=("$(awk -v x="$x" -v t="$t" 'BEGIN {printf "%.3f", x/t}')")
	rb+=("$(awk -v x="$y" -v t="$t" 'BEGIN {printf "%.3f", x/t}')")
	printf 'round %s  trivial %-10s A %-10s (%s)  B %-10s (%s)\n' "$r" "$t" "$x" "${ra[-1]}" "$y" "${rb[-1]}"
done
median() { printf '%s\n' "$@" | sort -n | awk '{v[NR]=$1} END {print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }
printf 'ratio to trivial, median of %s rounds: A %s  B %s\n' "$rounds" "$(median "${ra[@]}")" "$(median "${rb[@]}")"
