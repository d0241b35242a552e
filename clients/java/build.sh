#!/usr/bin/env bash
# Builds, tests and measures the Java client offline: javac (Java 11
# target) and, for the tests, JUnit 5's console launcher from Debian's
# junit5 package (Maven Central is not needed; pom.xml is for users).
#
#   clients/java/build.sh [jar|test|bench]
#
#   jar    build/frond-client.jar (the default)
#   test   the jar, then the tests against a real frond serve: FROND_TEST_BIN, or
#          the binary built here from the repository (go build ./cmd/frond)
#   bench  the jar, then Bench: nextId against AtomicLong.incrementAndGet (no JUnit needed)
set -euo pipefail
cd "$(dirname "$0")"
junit="${JUNIT_JAR:-/usr/share/java/junit-platform-console-standalone.jar}"
out=build
rm -rf "$out/classes" "$out/test-classes"
mkdir -p "$out/classes" "$out/test-classes"
javac --release 11 -Xlint:all,-serial -Werror -d "$out/classes" $(find src/main/java -name '*.java')
mkdir -p "$out/classes/META-INF"
cp ../../LICENSE "$out/classes/META-INF/LICENSE" # Apache-2.0, in the jar as the field's jars carry it
jar --create --file "$out/frond-client.jar" -C "$out/classes" .
echo "built $(pwd)/$out/frond-client.jar"

frond_bin() {
  if [ -z "${FROND_TEST_BIN:-}" ]; then
    (cd ../.. && go build -o clients/java/build/frond ./cmd/frond)
    FROND_TEST_BIN="$PWD/$out/frond"
  fi
  export FROND_TEST_BIN
}

case "${1:-jar}" in
  jar) ;;
  test)
    [ -f "$junit" ] || { echo "no $junit: apt-get install junit5" >&2; exit 1; }
    frond_bin
    javac --release 11 -Xlint:all,-serial -Werror -d "$out/test-classes" -cp "$out/classes:$junit" $(find src/test/java -name '*.java')
    java -jar "$junit" --class-path "$out/classes:$out/test-classes" --scan-class-path --fail-if-no-tests --disable-banner --details=tree
    ;;
  bench)
    frond_bin
    # The benchmark and the server it starts only: JUnit is the tests' (a
    # user's benchmark needs the client alone).
    javac --release 11 -d "$out/test-classes" -cp "$out/classes" src/test/java/io/github/frondid/frond/{Bench,FrondServer}.java
    java -cp "$out/classes:$out/test-classes" io.github.frondid.frond.Bench "${@:2}"
    ;;
  *) echo "usage: clients/java/build.sh [jar|test|bench]" >&2; exit 2 ;;
esac
