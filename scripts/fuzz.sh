#!/usr/bin/env bash
# Runs every cargo-fuzz target of fuzz/ for SECONDS each (default 20: a smoke run), one job at a
# time, starting from the committed seeds (fuzz/seeds/TARGET) plus what earlier runs found
# (fuzz/corpus/TARGET, not committed). Crashes land in fuzz/artifacts/TARGET.
#
#   scripts/fuzz.sh            # every target, 20 s each
#   scripts/fuzz.sh 300        # every target, 5 min each
#   scripts/fuzz.sh 60 sse_framing stdio_framing
#
# One libFuzzer process per target, one target after another (libFuzzer's default is one job;
# -jobs/-workers would fork children that log elsewhere). Set CARGO_TARGET_DIR to share a build.
#
# Needs a nightly toolchain and cargo-fuzz (`cargo install cargo-fuzz`); without them it says so
# and exits 0, so CI can call it whether or not a nightly is present.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-20}"
shift || true
if ! rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
    echo "fuzz.sh: no nightly toolchain here (rustup toolchain install nightly); not fuzzing." >&2
    exit 0
fi
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    echo "fuzz.sh: cargo-fuzz is not installed (cargo install cargo-fuzz); not fuzzing." >&2
    exit 0
fi
targets=("$@")
if [ "${#targets[@]}" -eq 0 ]; then
    mapfile -t targets < <(cargo +nightly fuzz list)
fi
cargo +nightly fuzz build -O >&2
status=0
for t in "${targets[@]}"; do
    mkdir -p "fuzz/corpus/$t"
    echo "== $t: ${seconds} s" >&2
    if ! cargo +nightly fuzz run -O "$t" "fuzz/corpus/$t" "fuzz/seeds/$t" -- \
        -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 \
        -print_final_stats=1 2>"fuzz/$t.log"; then
        echo "!! $t found a crash: see fuzz/artifacts/$t and fuzz/$t.log" >&2
        status=1
    fi
    grep -E '^(stat::number_of_executed_units|stat::peak_rss_mb)' "fuzz/$t.log" >&2 || true
done
exit "$status"
