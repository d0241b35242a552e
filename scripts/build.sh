#!/usr/bin/env bash
# Builds one static, reproducible frond binary.
#
#   scripts/build.sh OUT [GOOS/GOARCH]
#
# The version, commit and date are linked in (frond version prints them).
# They come from FROND_VERSION, FROND_COMMIT and FROND_DATE when set (a build
# without .git, such as the Dockerfile's), else from git: the nearest tag
# (or "dev"), HEAD, and HEAD's commit time. The date is the commit's, not the
# clock's, so two builds of one commit are the same bytes (scripts/release.sh
# checks it): -trimpath drops local paths, -buildid= the build ID, and
# CGO_ENABLED=0 makes the binary static (it runs in a scratch image).
set -euo pipefail
cd "$(dirname "$0")/.."

out="${1:?usage: scripts/build.sh OUT [GOOS/GOARCH]}"
target="${2:-$(go env GOOS)/$(go env GOARCH)}"
goos="${target%/*}"
goarch="${target#*/}"

if [ -z "${FROND_COMMIT:-}" ] && git rev-parse --git-dir >/dev/null 2>&1; then
  FROND_COMMIT="$(git rev-parse HEAD)"
  FROND_DATE="${FROND_DATE:-$(TZ=UTC git log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ HEAD)}"
  FROND_VERSION="${FROND_VERSION:-$(git describe --tags --match 'v*' 2>/dev/null || echo dev)}"
  if ! git diff --quiet HEAD -- 2>/dev/null; then
    FROND_VERSION="${FROND_VERSION}-modified"
  fi
fi
version="${FROND_VERSION:-dev}"
commit="${FROND_COMMIT:-unknown}"
date="${FROND_DATE:-unknown}"

CGO_ENABLED=0 GOOS="$goos" GOARCH="$goarch" GOFLAGS="${GOFLAGS:-} -buildvcs=false" \
  go build -trimpath -ldflags "-s -w -buildid= -X main.version=${version} -X main.commit=${commit} -X main.date=${date}" \
  -o "$out" ./cmd/frond
echo "built $out ($goos/$goarch, frond $version, commit $commit, $date)"
