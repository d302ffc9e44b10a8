#!/usr/bin/env bash
# State-store benchmark: `state.backend: redis` vs `memory` (small JSON throughput, and the
# latency a legacy elicitation round trip gains). See BENCHMARKS.md and bench/state.py.
#   bench/state.sh                 (about 3 minutes after the build)
#   bench/state.sh --rounds 3 --samples 500
set -euo pipefail
cd "$(dirname "$0")/.."
for tool in wrk redis-server; do
  command -v "$tool" >/dev/null || { echo "missing $tool (apt-get install wrk redis-server)" >&2; exit 1; }
done
cargo build --release --locked --bin elicitgate --example bench_upstream
target=${CARGO_TARGET_DIR:-target}/release
exec python3 bench/state.py --gateway-bin "$target/elicitgate" --upstream-bin "$target/examples/bench_upstream" "$@"
