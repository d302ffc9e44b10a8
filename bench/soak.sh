#!/usr/bin/env bash
# Soak run: idle SSE streams + small-JSON load + a trickle of elicitations for a
# fixed time; samples RSS, descriptors and errors. See bench/soak.py --help and BENCHMARKS.md.
#   bench/soak.sh                            # 10,000 streams, 10 minutes (release build)
#   bench/soak.sh --streams 2000 --minutes 2
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
command -v wrk >/dev/null 2>&1 || { echo "wrk missing: run bench/run.sh --smoke once (it installs it)" >&2; exit 1; }
cargo build --release --locked --bin elicitgate --example bench_upstream
target_dir=${CARGO_TARGET_DIR:-$root/target}
# Each idle stream costs the proxy two descriptors and the client one.
# Each idle stream costs the proxy two descriptors and the client one; root may raise the
# hard limit (10,000 streams need more than 20,000).
ulimit -Hn 65536 2>/dev/null || true
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
exec python3 "$root/bench/soak.py" --gateway-bin "$target_dir/release/elicitgate" \
  --upstream-bin "$target_dir/release/examples/bench_upstream" --wrk-bin "$(command -v wrk)" "$@"
