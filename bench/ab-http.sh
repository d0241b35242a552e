#!/usr/bin/env bash
# The HTTP A/B of bench/ab.sh (its former name): see there.
PROTO=http exec "$(dirname "$0")/ab.sh" "$@"
