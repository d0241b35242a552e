#!/usr/bin/env bash
# Starts the servers and installs the tools the real-server tests need, as
# CI does (.ci/services.sh: from Debian, when missing; installing needs
# root), then prints their addresses as export lines for your shell:
#
#   eval "$(bash scripts/test-env.sh)"
#   go test -race ./...
#
# Without the FROND_TEST_* variables those tests skip (see the README).
set -euo pipefail
cd "$(dirname "$0")/.."
. .ci/services.sh
{
  ensure_mariadb
  ensure_postgres
  ensure_redis
  ensure_etcd
  ensure_zookeeper
  ensure_tools
} >&2
for v in $(compgen -e | grep '^FROND_TEST_' | sort); do
  printf 'export %s=%q\n' "$v" "${!v}"
done
