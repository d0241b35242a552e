#!/usr/bin/env bash
# Latency through store faults: frond, a single-buffer reference service and
# a trivial server, loaded at the same fixed rate while a proxy slows, stops,
# cuts or restarts the segment store (MariaDB, PostgreSQL, a Redis with an
# AOF synced on every write). See docs/benchmarks.md, "Latency through store
# faults", and bench/faults/main.go for the flags.
#
#   bash bench/faults.sh                 every fault on every store, and the other front doors
#                                        (about 40 minutes): tables in faults-out/summary.md,
#                                        pictures in faults-out/*.png, copied to docs/img/faults/
#   bash bench/faults.sh -smoke          one 5 s stop of Redis: exit 1 unless frond had no error and no duplicate
#   bash bench/faults.sh -stores postgres -faults stop5,cut30 -doors ""
#
# The stores come from .ci/services.sh (installed and started when missing:
# root), the pictures from Debian's python3-matplotlib (installed when
# missing).
set -euo pipefail
cd "$(dirname "$0")/.."
. .ci/services.sh
{
  ensure_mariadb
  ensure_postgres
  ensure_redis # its redis-server binary: the benchmark starts a Redis of its own
} >&2
args=("$@")
if [ ${#args[@]} -eq 0 ]; then
  args=(-docs docs/img/faults)
fi
if [[ " ${args[*]} " != *" -smoke "* ]] && ! /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
  apt_install python3-matplotlib
fi
exec go run ./bench/faults -mysql "$FROND_TEST_MYSQL_URL" -postgres "$FROND_TEST_POSTGRES_URL" -out "${FAULTS_OUT:-faults-out}" "${args[@]}"
