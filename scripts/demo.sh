#!/usr/bin/env bash
# Install memoryclaw into .venv and run it on sample_vault/: index, search, retrieve.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
  "${PYTHON:-python3}" -m venv .venv
fi
.venv/bin/python -m pip install -q --disable-pip-version-check -e .
mc() { .venv/bin/memoryclaw --vault sample_vault "$@"; }
echo "\$ memoryclaw --vault sample_vault reindex"
mc reindex
echo
echo "\$ memoryclaw --vault sample_vault search \"what did I email John about\""
mc search "what did I email John about"
echo
echo "\$ memoryclaw --vault sample_vault retrieve \"when is the projectX deadline?\""
mc retrieve "when is the projectX deadline?"
