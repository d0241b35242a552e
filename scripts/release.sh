#!/usr/bin/env bash
# Builds frond's release binaries for linux/amd64 and linux/arm64 into
# dist/ (or DIST), with SHA256SUMS. One command, reproducible: the same commit
# gives the same bytes on any machine with the same Go version (see
# scripts/build.sh). --check then builds linux/amd64 again from nothing
# (go build -a: no cached package) at another output path and fails unless
# the bytes are the same.
#
#   scripts/release.sh [--check] [--tag] [VERSION]
#
# VERSION (v1.2.3, or a pre-release such as v1.3.0-rc.1) is linked in:
# frond version prints it. CHANGELOG.md must describe it: a "## VERSION"
# section, or for a pre-release the "## Unreleased" one. --tag then makes
# the annotated git tag VERSION at HEAD (push it yourself: git push origin
# VERSION), so that go get github.com/frond-id/frond@VERSION finds it.
# Without VERSION the version is git's nearest v* tag, or "dev".
set -euo pipefail
cd "$(dirname "$0")/.."

check=false
tag=false
version=""
for arg in "$@"; do
  case "$arg" in
    --check) check=true ;;
    --tag) tag=true ;;
    v*) version="$arg" ;;
    *) echo "usage: scripts/release.sh [--check] [--tag] [VERSION]" >&2; exit 2 ;;
  esac
done
if [ -n "$version" ]; then
  if ! [[ $version =~ ^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$ ]]; then
    echo "release: $version: a version is v1.2.3 or v1.2.3-rc.1 (semantic versioning, as Go modules need)" >&2
    exit 2
  fi
  section="## $version"
  [[ $version == *-* ]] && ! grep -q "^$section\b" CHANGELOG.md && section="## Unreleased"
  if ! grep -q "^$section\b" CHANGELOG.md; then
    echo "release: CHANGELOG.md has no \"## $version\" section: say what the version changes for users first" >&2
    exit 1
  fi
  export FROND_VERSION="$version"
elif $tag; then
  echo "release: --tag needs a VERSION" >&2
  exit 2
fi

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
if $check; then
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
if $tag; then
  git tag -a "$version" -m "frond $version (CHANGELOG.md)"
  echo "release: tagged $version at $(git rev-parse --short HEAD); push it: git push origin $version"
fi
