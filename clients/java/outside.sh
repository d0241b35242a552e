#!/usr/bin/env bash
# A Java program outside the repository (.ci/javaget/Main.java), compiled
# and run against the built jar alone and a running frond serve, as a user's
# program would be (issue 45).
set -euo pipefail
cd "$(dirname "$0")"
jar="$PWD/build/frond-client.jar"
bin="${FROND_TEST_BIN:-$PWD/build/frond}"
. ../../.ci/frond.sh
cp ../../.ci/javaget/Main.java "$work/"
frond_start "$bin"
addr="$(frond_addr)"
(cd "$work" && javac -cp "$jar" Main.java && java -cp "$jar:." Main "$addr")
