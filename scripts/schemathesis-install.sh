#!/usr/bin/env bash
# schemathesis (PyPI) in a virtualenv kept in ~/.cache: test/http/schemathesis.test.ts runs it
# against /openapi.json in `npm test` (skipped, saying why, where it is missing). A machine that
# has it skips this; `.complete` is written last, so a broken install is redone.
set -euo pipefail
version="${SCHEMATHESIS_VERSION:-4.32.5}"
dir="$HOME/.cache/paperlink-schemathesis/$version"
if [ -f "$dir/.complete" ]; then
  echo "schemathesis $version: $dir (cached)"
  exit 0
fi
rm -rf "$dir"
python3 -m venv "$dir"
"$dir/bin/pip" install --quiet --disable-pip-version-check "schemathesis==$version"
"$dir/bin/st" --version
touch "$dir/.complete"
