#!/usr/bin/env bash
# Profiles elicitgate under load with perf (software cpu-clock sampling, so it also works in VMs
# without hardware counters). Loopback only; every process it starts is stopped at the end.
#
#   bench/profile.sh [small|large|mix] [seconds] [connections]
#
# Needs a release build (bench/run.sh makes one) and `perf` (Debian: linux-perf). Writes
# perf.data, the flat report (self time) and the call-graph report (children) to
# $BENCH_OUT/profile-<scenario>/ and prints the top of both.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
scenario=${1:-small}
seconds=${2:-10}
conns=${3:-32}
target_dir=${CARGO_TARGET_DIR:-$root/target}
bin=$target_dir/release
out=${BENCH_OUT:-$target_dir/bench}/profile-$scenario
mkdir -p "$out"
command -v perf >/dev/null || { echo "perf is not installed (apt-get install linux-perf)" >&2; exit 1; }
[ -x "$bin/elicitgate" ] && [ -x "$bin/examples/bench_upstream" ] || {
  echo "build first: cargo build --release --bin elicitgate --example bench_upstream" >&2; exit 1; }

# shellcheck source=bench/lib.sh
. "$root/bench/lib.sh"
up=$(port); gw=$(port); adm=$(port)
cat >"$out/elicitgate.yaml" <<EOF
listen: "127.0.0.1:$gw"
admin_listen: "127.0.0.1:$adm"
log: { level: warn }
audit: { sink: "off" }
routes: [ { name: bench, path: /mcp, upstream: "http://127.0.0.1:$up/mcp" } ]
policies: { default: { rate: { max_per_minute: 1000000000 } } }
EOF
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT
env -u RUST_LOG "$bin/examples/bench_upstream" --listen "127.0.0.1:$up" >"$out/upstream.log" 2>&1 &
pids+=($!)
env -u RUST_LOG "$bin/elicitgate" serve --config "$out/elicitgate.yaml" >"$out/elicitgate.log" 2>&1 &
gwpid=$!
pids+=($gwpid)
for _ in $(seq 100); do
  curl -s -o /dev/null "http://127.0.0.1:$gw/" && curl -s -o /dev/null "http://127.0.0.1:$up/" -X DELETE && break
  sleep 0.1
done
session=$(bench_session "$gw")
echo "elicitgate pid $gwpid, session $session"
BENCH_SCENARIO=$scenario BENCH_SESSION=$session wrk -t1 -c1 -d1s -s bench/wrk_mcp.lua "http://127.0.0.1:$gw/mcp" >/dev/null
perf record -e cpu-clock -F 1999 --call-graph dwarf,16384 -p "$gwpid" -o "$out/perf.data" -- sleep "$seconds" \
  >"$out/perf-record.log" 2>&1 &
perfpid=$!
BENCH_SCENARIO=$scenario BENCH_SESSION=$session wrk -t2 -c"$conns" -d"${seconds}s" -s bench/wrk_mcp.lua \
  "http://127.0.0.1:$gw/mcp" | grep -v BENCHJSON
wait "$perfpid" || true
perf report -i "$out/perf.data" --no-children --sort symbol --stdio --percent-limit 0.7 -g none \
  >"$out/self.txt" 2>/dev/null
perf report -i "$out/perf.data" --children --sort symbol --stdio --percent-limit 2 -g none \
  >"$out/children.txt" 2>/dev/null
echo "== self time (top)"; grep -v '^#' "$out/self.txt" | grep -v '^$' | head -45
echo "== inclusive time (top)"; grep -v '^#' "$out/children.txt" | grep -v '^$' | head -60
echo "reports in $out"
