# Sourced by .ci/run: make sure every server the tests need is installed and
# running on 127.0.0.1, as on a bare Debian machine, and export the addresses
# the tests read. A server that is already running is used as it is.

apt_updated=
apt_install() {
  if [ -z "$apt_updated" ]; then
    apt-get update -qq >/dev/null
    apt_updated=1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

wait_for() { # description, command...
  local what=$1; shift
  for _ in $(seq 120); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.5
  done
  echo "$what did not come up"; return 1
}

ensure_mariadb() {
  if ! mysqladmin --protocol=tcp -h127.0.0.1 -P3306 ping >/dev/null 2>&1; then
    command -v mariadbd >/dev/null || apt_install mariadb-server mariadb-client
    mkdir -p /run/mysqld && chown mysql:mysql /run/mysqld
    start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd
    wait_for MariaDB mysqladmin --protocol=tcp -h127.0.0.1 -P3306 ping
  fi
  # As root over the local socket; a frond user so the tests need no root password.
  mariadb -uroot -e "CREATE DATABASE IF NOT EXISTS frond_test;
    CREATE USER IF NOT EXISTS 'frond'@'127.0.0.1' IDENTIFIED BY 'frond';
    CREATE USER IF NOT EXISTS 'frond'@'localhost' IDENTIFIED BY 'frond';
    GRANT ALL ON frond_test.* TO 'frond'@'127.0.0.1';
    GRANT ALL ON frond_test.* TO 'frond'@'localhost';
    CREATE DATABASE IF NOT EXISTS frond_test_b;
    GRANT ALL ON frond_test_b.* TO 'frond'@'127.0.0.1';
    GRANT ALL ON frond_test_b.* TO 'frond'@'localhost';
    GRANT ALL ON \`frond\\_t\\_%\`.* TO 'frond'@'127.0.0.1';
    GRANT ALL ON \`frond\\_t\\_%\`.* TO 'frond'@'localhost';"
  export FROND_TEST_MYSQL_URL="mysql://frond:frond@127.0.0.1:3306/frond_test"
  export FROND_TEST_MYSQL_URL_B="mysql://frond:frond@127.0.0.1:3306/frond_test_b"
  echo "MariaDB: $(mariadb -uroot -N -e 'SELECT VERSION()')"
}

ensure_postgres() {
  if ! pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then
    command -v pg_ctlcluster >/dev/null || apt_install postgresql
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | sort -V | tail -1)" main start
    wait_for PostgreSQL pg_isready -q -h 127.0.0.1 -p 5432
  fi
  su postgres -c "psql -q -v ON_ERROR_STOP=1" <<'SQL'
SELECT 'CREATE ROLE frond LOGIN PASSWORD ''frond''' WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'frond') \gexec
SELECT 'CREATE DATABASE frond_test OWNER frond' WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = 'frond_test') \gexec
-- Tests that place a store in a set of stores make databases of their own
-- (storetest.FreshDatabase).
ALTER ROLE frond CREATEDB;
SQL
  export FROND_TEST_POSTGRES_URL="postgres://frond:frond@127.0.0.1:5432/frond_test?sslmode=disable"
  echo "PostgreSQL: $(su postgres -c "psql -qtA -c 'SHOW server_version'")"
}

ensure_redis() {
  if ! redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; then
    command -v redis-server >/dev/null || apt_install redis-server
    mkdir -p /var/lib/redis /var/log/redis
    redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no \
      --dir /var/lib/redis --logfile /var/log/redis/ci.log
    wait_for Redis redis-cli -h 127.0.0.1 -p 6379 ping
  fi
  # Database 15 for frond's tests; keys are prefixed, nothing else is touched.
  export FROND_TEST_REDIS_URL="redis://127.0.0.1:6379/15"
  echo "Redis: $(redis-cli -h 127.0.0.1 -p 6379 info server | awk -F: '/redis_version/ {print $2}' | tr -d '\r')"
}

ensure_etcd() {
  if ! ETCDCTL_API=3 etcdctl --endpoints=127.0.0.1:2379 --dial-timeout=2s endpoint health >/dev/null 2>&1; then
    command -v etcd >/dev/null || apt_install etcd-server etcd-client
    mkdir -p /var/lib/frond-ci-etcd /var/log/frond-ci
    nohup etcd --name frond-ci --data-dir /var/lib/frond-ci-etcd \
      --listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
      --listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
      --initial-cluster frond-ci=http://127.0.0.1:2380 >/var/log/frond-ci/etcd.log 2>&1 &
    wait_for etcd env ETCDCTL_API=3 etcdctl --endpoints=127.0.0.1:2379 --dial-timeout=2s endpoint health
  fi
  export FROND_TEST_ETCD_ENDPOINTS="127.0.0.1:2379"
  echo "etcd: $(etcd --version 2>/dev/null | head -1)"
}

zk_srvr() { timeout 2 bash -c 'exec 3<>/dev/tcp/127.0.0.1/2181 && printf srvr >&3 && cat <&3' 2>/dev/null; }
zk_ok() { # ZooKeeper on 127.0.0.1:2181 serves requests ("ruok" answers before it does)
  zk_srvr | grep -q '^Mode:'
}

ensure_zookeeper() {
  if ! zk_ok; then
    [ -x /usr/share/zookeeper/bin/zkServer.sh ] || apt_install zookeeper
    # A private configuration: 127.0.0.1 only, no admin server, short ticks so
    # tests can use one-second sessions (minSessionTimeout = 2 ticks).
    local dir=/var/lib/frond-ci-zk
    mkdir -p "$dir/data" "$dir/log"
    cat >"$dir/zoo.cfg" <<CFG
tickTime=500
minSessionTimeout=1000
maxSessionTimeout=60000
initLimit=10
syncLimit=5
dataDir=$dir/data
clientPort=2181
clientPortAddress=127.0.0.1
admin.enableServer=false
4lw.commands.whitelist=srvr
CFG
    JMXDISABLE=true ZOO_LOG_DIR="$dir/log" /usr/share/zookeeper/bin/zkServer.sh start "$dir/zoo.cfg" >/dev/null
    wait_for ZooKeeper zk_ok
  fi
  export FROND_TEST_ZK_SERVERS="127.0.0.1:2181"
  echo "ZooKeeper: $(zk_srvr | head -1)"
}

# The clients the end-to-end tests drive and the code generator CI checks:
# redis-cli and redis-benchmark (Debian's redis-tools), protoc (Debian's
# protobuf-compiler), promtool (Debian's prometheus), chromium (the
# dashboard's browser test), grpcurl (built from the Go module proxy,
# pinned), and the packaging checks' docker-compose (Debian's 1.29, without
# the Docker daemon it recommends: only "config" runs) and systemd-analyze
# (Debian's systemd).
ensure_tools() {
  command -v redis-benchmark >/dev/null || apt_install redis-tools
  command -v protoc >/dev/null || apt_install protobuf-compiler
  command -v promtool >/dev/null || apt_install prometheus
  command -v chromium >/dev/null || apt_install chromium
  command -v docker-compose >/dev/null || apt_install --no-install-recommends docker-compose
  command -v systemd-analyze >/dev/null || apt_install --no-install-recommends systemd
  command -v javac >/dev/null || apt_install --no-install-recommends openjdk-17-jdk-headless
  command -v npm >/dev/null || apt_install --no-install-recommends nodejs npm
  [ -f /usr/share/java/junit-platform-console-standalone.jar ] || apt_install --no-install-recommends junit5
  # The Python client's tests: Debian's python3 and pytest (PyPI is not reachable).
  /usr/bin/python3 -c 'import pytest' 2>/dev/null || apt_install --no-install-recommends python3 python3-pytest
  # Its package: a wheel built offline (pip, setuptools, wheel) and installed
  # in a fresh virtual environment (venv, with Debian's pip wheel).
  { /usr/bin/python3 -c 'import setuptools, wheel, venv, ensurepip' && /usr/bin/python3 -m pip --version; } >/dev/null 2>&1 ||
    apt_install --no-install-recommends python3-pip python3-setuptools python3-wheel python3-venv
  local gobin
  gobin="$(go env GOPATH)/bin"
  export PATH="$PATH:$gobin"
  command -v grpcurl >/dev/null || go install github.com/fullstorydev/grpcurl/cmd/grpcurl@v1.9.3
  echo "tools: $(redis-cli --version), $(protoc --version), $(promtool --version 2>&1 | head -1), $(chromium --version 2>/dev/null), grpcurl $(grpcurl -version 2>&1 | awk '{print $2}'), $(docker-compose version --short 2>/dev/null | sed 's/^/docker-compose /'), $(systemd-analyze --version | head -1), $(javac -version 2>&1), JUnit $(ls /usr/share/java/junit-platform-console-standalone-*.jar 2>/dev/null | sed 's/.*standalone-//; s/.jar$//'), node $(node --version)"
}
