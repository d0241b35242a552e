#!/usr/bin/env bash
# Builds the Python client's wheel and source archive into dist/, offline,
# with the machine's Python (Debian: python3-pip, python3-setuptools,
# python3-wheel): no download, no build isolation.
#
#   bash clients/python/build.sh     # prints the wheel's path
set -euo pipefail
cd "$(dirname "$0")"
py="${PYTHON:-/usr/bin/python3}"
rm -rf dist build src/*.egg-info
"$py" -m pip wheel --quiet --no-deps --no-build-isolation --no-index -w dist . >&2
"$py" -c 'from setuptools import build_meta; build_meta.build_sdist("dist")' >/dev/null
rm -rf build src/*.egg-info
wheel="$(ls dist/frond_client-*-py3-none-any.whl)"
for f in frond_client/__init__.py frond_client/py.typed frond_client/codes.py; do
  "$py" -c 'import sys, zipfile; names = zipfile.ZipFile(sys.argv[1]).namelist(); sys.exit(0 if sys.argv[2] in names else "the wheel has no " + sys.argv[2])' "$wheel" "$f"
done
echo "$PWD/$wheel"
