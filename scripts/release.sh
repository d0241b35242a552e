#!/usr/bin/env bash
# Builds frond's release binaries for linux/amd64 and linux/arm64 into
# dist/ (or DIST), with SHA256SUMS. One command, reproducible: the same commit
# gives the same bytes on any machine with the same Go version (see
# scripts/build.sh). --check then builds linux/amd64 again from nothing
# (go build -a: no cached package) at another output path and fails unless
# the bytes are the same.
#
#   scripts/release.sh [--check]
set -euo pipefail
cd "$(dirname "$0")/.."

dist="${DIST:-dist}"
targets="linux/amd64 linux/arm64"

build_all() {
  local dir="$1"
  rm -rf "$dir"
  mkdir -p "$dir"
  for t in $targets; do
    bash scripts/build.sh "$dir/frond-${t%/*}-${t#*/}" "$t"
  done
  (cd "$dir" && sha256sum frond-* > SHA256SUMS)
}

build_all "$dist"
cat "$dist/SHA256SUMS"
if [ "${1:-}" = "--check" ]; then
  again="$(mktemp -d)"
  trap 'rm -rf "$again"' EXIT
  GOFLAGS="${GOFLAGS:-} -a" bash scripts/build.sh "$again/frond" linux/amd64
  a="$(sha256sum < "$dist/frond-linux-amd64")"
  b="$(sha256sum < "$again/frond")"
  if [ "$a" != "$b" ]; then
    echo "release: two builds of the same commit differ ($a, $b): not reproducible" >&2
    exit 1
  fi
  echo "release: reproducible (linux/amd64 built twice, the second without the build cache: same SHA-256 ${a%% *})"
fi
