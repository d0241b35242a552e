#!/bin/sh
# Writes the secrets compose.yaml reads, with random values, into DIR
# (default: secrets/ beside this script), unless they are there already:
#   admin-token   frond's admin token (admin_token_file)
#   db-password   the MariaDB password of the user frond
#   frond.yaml    frond's configuration file with the store URL, which holds
#                 that password
# The files are 0644 so that the containers' users (frond runs as 65532,
# MariaDB as mysql) can read them; the directory is 0700.
set -eu
dir="${1:-$(dirname "$0")/secrets}"
mkdir -p "$dir"
chmod 0700 "$dir"

random_hex() { # 24 random bytes as hex: no character that needs escaping in a URL
  od -An -N24 -tx1 /dev/urandom | tr -d ' \n'
}

if [ ! -s "$dir/admin-token" ]; then
  random_hex >"$dir/admin-token"
fi
if [ ! -s "$dir/db-password" ]; then
  random_hex >"$dir/db-password"
fi
if [ ! -s "$dir/frond.yaml" ]; then
  printf 'store: mysql://frond:%s@mariadb:3306/frond\n' "$(cat "$dir/db-password")" >"$dir/frond.yaml"
fi
chmod 0644 "$dir/admin-token" "$dir/db-password" "$dir/frond.yaml"
echo "secrets in $dir: admin-token, db-password, frond.yaml"
