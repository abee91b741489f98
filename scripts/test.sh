#!/usr/bin/env bash
# Every check the project has: lint, format, types, the docs build, then the test suite.
# Creates .venv on first use and installs the package with its dev extra.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
  "${PYTHON:-python3}" -m venv .venv
fi
.venv/bin/python -m pip install -q --disable-pip-version-check -e '.[dev]'
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy
# The documentation site: a broken link or anchor fails the build.
site=$(mktemp -d)
NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict --quiet --site-dir "$site"
rm -rf "$site"
# One worker per core; a file's tests stay together, so its module fixtures are made once.
exec .venv/bin/python -m pytest -n auto --dist loadfile "$@"
