#!/usr/bin/env bash
# The release, end to end, as a user gets it (issue 44): in a clone of HEAD,
# scripts/release.sh --prepare VERSION and a commit, then the release itself
# (--check: the archives reproducible; --tag: the tags go get resolves;
# --proxy: every module in a GOPROXY=file:// directory). Then, outside the
# repository, a fresh module go gets the root module, the client and each
# contrib module by version from that proxy (GOSUMDB=off: the sum database
# does not know a local release) and runs a program (main.go here) against
# the release's own linux/amd64 binary, unpacked from its archive.
#
#   bash .ci/goget/run.sh VERSION
set -euo pipefail
cd "$(dirname "$0")/../.."
version="${1:?usage: .ci/goget/run.sh VERSION}"
. .ci/frond.sh

git clone -q . "$work/repo"
(
  cd "$work/repo"
  git config user.name "frond CI"
  git config user.email "ci@frond.invalid"
  bash scripts/release.sh --prepare "$version"
  git commit -qam "release $version (CI's candidate)"
  bash scripts/release.sh --check --tag --proxy "$work/proxy" "$version"
  # The set is consistent now; a contrib module that requires another
  # version is refused.
  (cd contrib/gorm && go mod edit -require=github.com/frond-id/frond@v0.0.1)
  git commit -qam "an inconsistent set"
  if out=$(bash scripts/release.sh "${version%.*}.99" 2>&1); then
    echo "release.sh released an inconsistent set"; exit 1
  fi
  grep -q "inconsistent set" <<<"$out" || { echo "$out"; exit 1; }
)

dist="$work/repo/dist"
(cd "$dist" && sha256sum -c SHA256SUMS)
tar -xzf "$dist/frond-$version-linux-amd64.tar.gz" -C "$work"
bin="$work/frond-$version-linux-amd64/frond"
got="$("$bin" version | head -1)"
[ "$got" = "frond $version" ] || { echo "release: frond version printed \"$got\", not frond $version" >&2; exit 1; }

frond_start "$bin" --grpc-addr 127.0.0.1:0

mkdir "$work/use"
cp .ci/goget/main.go "$work/use/"
(
  cd "$work/use"
  export GOPROXY="file://$work/proxy,$(go env GOPROXY)" GOSUMDB=off GOFLAGS=-mod=mod
  go mod init example.com/goget >/dev/null 2>&1
  go get "github.com/frond-id/frond@$version" "github.com/frond-id/frond/contrib/gorm@$version" "github.com/frond-id/frond/contrib/ent@$version"
  go mod tidy
  grep -q "github.com/frond-id/frond $version" go.mod || { cat go.mod; echo "go.mod does not require frond $version"; exit 1; }
  grpc="$(frond_addr gRPC)"
  go run . "$grpc" || { cat "$work/serve.log"; exit 1; }
)
echo "release $version: archives reproducible, tags made, resolved by version from a module proxy and run"
