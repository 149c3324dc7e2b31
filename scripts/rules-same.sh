#!/usr/bin/env bash
# The rules' regression contract: a change to how the rules are implemented (issue 23, "rules
# as data") must leave every report byte-identical. Record the reports of one binary, then
# compare another binary's against them:
#
#   scripts/rules-same.sh record DIR [BIN]    # BIN defaults to target/release/mcpprobe
#   scripts/rules-same.sh compare DIR [BIN]   # exit 1 and a diff when any report differs
#
# The inputs: the document of every fixture under fixtures/rules/ (its "document", or its
# "raw" text, checked with the fixture's --kind), every file of
# ../shared/corpus/wild-dev/{benign,poisoned}/ (when that corpus is there), and the generated
# 10,000-tool list (scripts/gen-bench-tools.py). Each is checked with
# `check --format json --min-confidence low`; a JSON report of `check` has no timestamps or
# durations, so nothing is stripped. Inputs are written under DIR/inputs so both runs read the
# same paths (the report names its target).
set -euo pipefail

mode=${1:?usage: rules-same.sh record|compare DIR [BIN]}
dir=${2:?usage: rules-same.sh record|compare DIR [BIN]}
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${3:-$root/target/release/mcpprobe}
[ -x "$bin" ] || { echo "no binary at $bin (cargo build --release)" >&2; exit 2; }

inputs=$dir/inputs
mkdir -p "$inputs"
if [ "$mode" = record ] || [ ! -e "$inputs/.done" ]; then
    python3 - "$root" "$inputs" <<'PY'
import json, os, shutil, sys
root, out = sys.argv[1], sys.argv[2]
kinds = {}
fx = os.path.join(root, "fixtures/rules")
for rule in sorted(os.listdir(fx)):
    d = os.path.join(fx, rule)
    if not os.path.isdir(d):
        continue
    for name in sorted(os.listdir(d)):
        if not name.endswith(".json"):
            continue
        with open(os.path.join(d, name), encoding="utf-8") as f:
            fixture = json.load(f)
        target = f"fixture__{rule}__{name}"
        with open(os.path.join(out, target), "w", encoding="utf-8") as f:
            if "raw" in fixture:
                f.write(fixture["raw"])
            else:
                json.dump(fixture["document"], f, ensure_ascii=False)
        kinds[target] = fixture.get("kind", "tools")
corpus = os.path.join(root, "..", "shared", "corpus", "wild-dev")
for side in ("benign", "poisoned"):
    d = os.path.join(corpus, side)
    if not os.path.isdir(d):
        continue
    for name in sorted(os.listdir(d)):
        target = f"corpus__{side}__{name}"
        shutil.copyfile(os.path.join(d, name), os.path.join(out, target))
        kinds[target] = ""
with open(os.path.join(out, ".kinds"), "w") as f:
    for k, v in sorted(kinds.items()):
        f.write(f"{k}\t{v}\n")
PY
    python3 "$root/scripts/gen-bench-tools.py" "$inputs/big.json" 10000 >/dev/null
    printf 'big.json\t\n' >>"$inputs/.kinds"
    touch "$inputs/.done"
fi

reports=$dir/$mode
rm -rf "$reports"
mkdir -p "$reports"
n=0
while IFS=$'\t' read -r name kind; do
    args=(check --format json --min-confidence low)
    [ -n "$kind" ] && args+=(--kind "$kind")
    # Exit codes say what was found; the report (and the code) are what is compared.
    rc=0
    (cd "$inputs" && "$bin" "${args[@]}" "$name") >"$reports/$name.out" 2>"$reports/$name.err" || rc=$?
    echo "exit $rc" >>"$reports/$name.err"
    n=$((n + 1))
done <"$inputs/.kinds"

if [ "$mode" = record ]; then
    echo "recorded $n reports in $reports"
    exit 0
fi
if diff -r "$dir/record" "$reports" >"$dir/diff.txt"; then
    echo "same: $n reports byte-identical to $dir/record"
else
    echo "DIFFERENT: $(grep -c '^diff ' "$dir/diff.txt" || true) of $n reports differ; see $dir/diff.txt" >&2
    head -50 "$dir/diff.txt" >&2
    exit 1
fi
