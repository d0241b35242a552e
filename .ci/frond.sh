# Sourced by the scripts that run a real frond serve beside a program
# (clients/*/outside.sh, .ci/goget/run.sh): one way to start it, wait for
# its address, and stop it before its data directory goes.
#
#   . .ci/frond.sh
#   (sourcing makes $work, a temporary directory removed at exit)
#   frond_start BIN [FLAGS] # serves with its data in $work/data, log in $work/serve.log
#   frond_addr [PROTOCOL]   # prints the address of its HTTP (or "gRPC", ...) listener

work="$(mktemp -d)"
frond_pid=""

# frond_cleanup stops the server and waits for it (it writes its data
# directory as it stops) before the directory goes; the script's status is
# its own.
frond_cleanup() {
  local rc=$?
  if [ -n "$frond_pid" ]; then
    kill "$frond_pid" 2>/dev/null || true
    wait "$frond_pid" 2>/dev/null || true
  fi
  rm -rf "$work" || true
  exit "$rc"
}
trap frond_cleanup EXIT

frond_start() {
  local bin="$1"
  shift
  "$bin" serve --data-dir "$work/data" --http-addr 127.0.0.1:0 --log-format json "$@" 2>"$work/serve.log" &
  frond_pid=$!
}

frond_addr() {
  local msg="frond listening${1:+ for $1}" addr=""
  for _ in $(seq 100); do
    addr="$(sed -n 's/.*"msg":"'"$msg"'","addr":"\([^"]*\)".*/\1/p' "$work/serve.log")"
    [ -n "$addr" ] && { echo "$addr"; return 0; }
    sleep 0.2
  done
  cat "$work/serve.log" >&2
  echo "frond serve did not listen${1:+ for $1}" >&2
  return 1
}
