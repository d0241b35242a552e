#!/usr/bin/env bash
# Makes a release of frond: the archives users download, and the set of git
# tags that `go get` resolves.
#
#   scripts/release.sh --prepare VERSION
#   scripts/release.sh [--check] [--tag] [--proxy DIR] [VERSION]
#
# A release is one version of every Go module in the repository that users
# depend on: the root module (github.com/frond-id/frond, with the client) and
# each contrib module (contrib/gorm, contrib/ent), tagged VERSION and
# contrib/NAME/VERSION at one commit. A contrib module requires the root
# module at the version it is released with: --prepare VERSION writes that
# requirement into each contrib go.mod (commit it); a release refuses a set
# whose contrib modules require another version, and a tree with changes
# that are not committed (the tags and the proxy take the commit, not the
# working tree).
#
# VERSION (v1.2.3, or a pre-release such as v1.3.0-rc.1) is linked in: frond
# version prints it. CHANGELOG.md must describe it: a "## VERSION" section,
# or for a pre-release the "## Unreleased" one. Without VERSION, the
# archives are built with git's nearest v* tag (or "dev") and nothing is
# checked, tagged or published.
#
# It writes into dist/ (or DIST): frond-VERSION-OS-ARCH.tar.gz for linux and
# darwin on amd64 and arm64 (the binary, README.md, CHANGELOG.md), and
# SHA256SUMS. The archives are reproducible: the same commit and Go version
# give the same bytes on any machine (scripts/build.sh; tar with fixed
# owners, order and times, gzip without a name or time).
#
#   --check       builds the linux/amd64 archive again from nothing (go build
#                 -a: no cached package) and fails unless its bytes are the same
#   --tag         makes the annotated tags VERSION and contrib/NAME/VERSION at
#                 HEAD (push them: git push origin VERSION contrib/gorm/VERSION ...)
#   --proxy DIR   writes every module at VERSION into DIR in the layout that
#                 GOPROXY=file://DIR reads (scripts/modproxy), to try the
#                 release as users will get it before pushing its tags
set -euo pipefail
cd "$(dirname "$0")/.."

usage="usage: scripts/release.sh --prepare VERSION | scripts/release.sh [--check] [--tag] [--proxy DIR] [VERSION]"
check=false
tag=false
prepare=false
proxy=""
version=""
while [ $# -gt 0 ]; do
  case "$1" in
    --check) check=true ;;
    --tag) tag=true ;;
    --prepare) prepare=true ;;
    --proxy) proxy="${2:?--proxy needs a directory}"; shift ;;
    v*) version="$1" ;;
    *) echo "$usage" >&2; exit 2 ;;
  esac
  shift
done

root_module="github.com/frond-id/frond"
# The modules users depend on besides the root: every contrib/*/go.mod git
# knows.
contrib=$(git ls-files 'contrib/*/go.mod' | xargs -r -n1 dirname)

if [ -n "$version" ] && ! [[ $version =~ ^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$ ]]; then
  echo "release: $version: a version is v1.2.3 or v1.2.3-rc.1 (semantic versioning, as Go modules need)" >&2
  exit 2
fi
if [ -z "$version" ] && { $tag || $prepare || [ -n "$proxy" ]; }; then
  echo "release: --tag, --prepare and --proxy need a VERSION" >&2
  exit 2
fi

# required prints the version of the root module that the go.mod in $1
# requires.
required() {
  go mod edit -json "$1/go.mod" | awk -v m="\"$root_module\"" '$1 == "\"Path\":" && $2 == m"," { getline; gsub(/[",]/, "", $2); print $2; exit }'
}

if $prepare; then
  for m in $contrib; do
    (cd "$m" && go mod edit -require="$root_module@$version")
    echo "release: $m/go.mod requires $root_module $version"
  done
  if git diff --quiet -- $(for m in $contrib; do echo "$m/go.mod"; done); then
    echo "release: nothing to commit (every contrib module requires $version already); next: scripts/release.sh --check --tag $version"
  else
    echo "release: commit these, then run scripts/release.sh --check --tag $version"
  fi
  if [[ $version != *-* ]] && grep -q "^## Unreleased" CHANGELOG.md && ! grep -q "^## $version\b" CHANGELOG.md; then
    echo "release: CHANGELOG.md has no \"## $version\" section: rename \"## Unreleased\" to \"## $version ($(date -u +%Y-%m-%d))\" (and drop its \"No version has been released yet\" lines) before the release"
  fi
  exit 0
fi

# step says what the release does now and about what it costs, on a
# 2-core machine (issue 60: it was silent for 21 minutes of 38).
step() { echo "release: $(date -u +%H:%M:%S) $*"; }

if [ -n "$version" ]; then
  section="## $version"
  [[ $version == *-* ]] && ! grep -q "^$section\b" CHANGELOG.md && section="## Unreleased"
  if ! grep -q "^$section\b" CHANGELOG.md; then
    echo "release: CHANGELOG.md has no \"## $version\" section: say what the version changes for users first" >&2
    exit 1
  fi
  bad=""
  for m in $contrib; do
    got="$(required "$m")"
    [ "$got" = "$version" ] || bad="$bad $m/go.mod requires $root_module ${got:-nothing};"
  done
  if [ -n "$bad" ]; then
    echo "release: an inconsistent set: each contrib module must require the root module at $version:$bad run scripts/release.sh --prepare $version and commit" >&2
    exit 1
  fi
  if $tag || [ -n "$proxy" ]; then
    if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
      git status --short --untracked-files=no >&2
      echo "release: the tree has changes that are not committed; the tags and the proxy take the commit: commit or stash them" >&2
      exit 1
    fi
    for t in "$version" $(for m in $contrib; do echo "$m/$version"; done); do
      if git rev-parse -q --verify "refs/tags/$t" >/dev/null; then
        echo "release: the tag $t exists already: a version is released once (go.sum holds its hash everywhere)" >&2
        exit 1
      fi
    done
  fi
  export FROND_VERSION="$version"
fi

dist="${DIST:-dist}"
targets="linux/amd64 linux/arm64 darwin/amd64 darwin/arm64"
name_version="${version:-$(git describe --tags --match 'v*' 2>/dev/null || echo dev)}"
# Archive entries carry the commit's time, not the clock's.
epoch="$(git log -1 --format=%ct HEAD 2>/dev/null || echo 0)"

# archive builds the archive of target $2 into directory $1.
archive() {
  local dir="$1" t="$2"
  local base="frond-$name_version-${t%/*}-${t#*/}"
  local stage
  stage="$(mktemp -d)"
  mkdir "$stage/$base"
  bash scripts/build.sh "$stage/$base/frond" "$t"
  cp README.md CHANGELOG.md LICENSE "$stage/$base/"
  chmod 0755 "$stage/$base/frond"
  chmod 0644 "$stage/$base/README.md" "$stage/$base/CHANGELOG.md" "$stage/$base/LICENSE"
  tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$epoch" --format=gnu \
    -C "$stage" -cf - "$base" | gzip -n -9 > "$dir/$base.tar.gz"
  rm -rf "$stage"
}

rm -rf "$dist"
mkdir -p "$dist"
for t in $targets; do
  step "building the $t archive (a full build of frond: 1 to 4 minutes, the first with an empty build cache the longest)"
  archive "$dist" "$t"
done
(cd "$dist" && sha256sum frond-*.tar.gz > SHA256SUMS)
cat "$dist/SHA256SUMS"

if $check; then
  again="$(mktemp -d)"
  trap 'rm -rf "$again"' EXIT
  step "building linux/amd64 again without the build cache (go build -a), to compare its bytes: the longest step, 10 to 20 minutes"
  GOFLAGS="${GOFLAGS:-} -a" archive "$again" linux/amd64
  f="frond-$name_version-linux-amd64.tar.gz"
  a="$(sha256sum < "$dist/$f")"
  b="$(sha256sum < "$again/$f")"
  if [ "$a" != "$b" ]; then
    echo "release: two builds of the same commit differ ($a, $b): not reproducible" >&2
    exit 1
  fi
  echo "release: reproducible ($f built twice, the second without the build cache: the same SHA-256 ${a%% *})"
fi

if [ -n "$proxy" ]; then
  step "writing every module at $version into $proxy (seconds)"
  go run ./scripts/modproxy -dir "$proxy" -version "$version" -revision HEAD . $contrib
  echo "release: try it as users will: GOPROXY=file://$(cd "$proxy" && pwd),\$(go env GOPROXY) GOSUMDB=off go get $root_module@$version"
fi

if $tag; then
  git tag -a "$version" -m "frond $version (CHANGELOG.md)"
  for m in $contrib; do
    git tag -a "$m/$version" -m "frond $m $version (CHANGELOG.md)"
  done
  echo "release: tagged $version$(for m in $contrib; do printf ' %s' "$m/$version"; done) at $(git rev-parse --short HEAD); push them:"
  echo "  git push origin $version$(for m in $contrib; do printf ' %s' "$m/$version"; done)"
fi
