#!/usr/bin/env bash
# Regenerates the check table in README.md from the catalogue (checks/*/*.toml).
# A test (readme_check_table_is_current) fails when the table is stale.
set -euo pipefail
cd "$(dirname "$0")/.."
table=$(cargo run --quiet -- checks --format markdown)
python3 - "$table" <<'PY'
import sys, re
table = sys.argv[1] + "\n"
text = open("README.md").read()
begin, end = "<!-- checks:begin -->\n", "<!-- checks:end -->"
i, j = text.index(begin) + len(begin), text.index(end)
open("README.md", "w").write(text[:i] + table + text[j:])
PY
echo "README.md check table regenerated"
