#!/usr/bin/env bash
# Regenerates the Go code of frond's protocol buffers (proto/frond/v1) with
# protoc (Debian's protobuf-compiler) and the Go plugins pinned as tools in
# go.mod, so that the output is the same on every machine with the same
# protoc. With --check it regenerates into a scratch directory and fails
# when the checked-in code differs (CI runs that).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
command -v protoc >/dev/null || { echo "gen.sh: protoc not found: apt-get install protobuf-compiler" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/bin/protoc-gen-go" google.golang.org/protobuf/cmd/protoc-gen-go
go build -o "$tmp/bin/protoc-gen-go-grpc" google.golang.org/grpc/cmd/protoc-gen-go-grpc
out=.
[ "${1:-}" = --check ] && out="$tmp/out" && mkdir -p "$out"
PATH="$tmp/bin:$PATH" protoc -I proto \
	--go_out="$out" --go_opt=module=github.com/frond-id/frond \
	--go-grpc_out="$out" --go-grpc_opt=module=github.com/frond-id/frond \
	proto/frond/v1/*.proto
if [ "${1:-}" = --check ]; then
	for f in "$out"/proto/frond/v1/*.go; do
		if ! cmp -s "$f" "proto/frond/v1/$(basename "$f")"; then
			echo "gen.sh: proto/frond/v1/$(basename "$f") is not current: run go generate ./proto/..." >&2
			diff -u "proto/frond/v1/$(basename "$f")" "$f" | head -40 >&2 || true
			exit 1
		fi
	done
	echo "gen.sh: generated code is current"
fi
