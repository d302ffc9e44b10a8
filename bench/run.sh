#!/usr/bin/env bash
# The benchmark: elicitgate vs nginx vs direct, on loopback, interleaved. See BENCHMARKS.md.
#
#   bench/run.sh            full run (about 8 minutes on 2 cores, after the builds)
#   bench/run.sh --smoke    seconds: proves the harness works end to end (used by CI), exits 0
#
# Installs what it needs when missing (Debian nginx and wrk, as root), builds the gateway and
# the mock upstream (examples/bench_upstream.rs), then runs bench/harness.py, which starts
# upstream, nginx and elicitgate on 127.0.0.1 ports of its own and stops them at the end.
# Extra arguments go to harness.py (e.g. --rounds 5, --duration 20; see --help there).
# The full run builds with --release; --smoke uses the test profile (already built by
# `cargo test`, so nothing is rebuilt) unless BENCH_PROFILE names another (`release`, `dev`).
# ELICITGATE_BIN names a gateway binary to measure instead (the mock upstream is still built
# with the profile). Output: the report on stdout, and report.md +
# results.json in $BENCH_OUT (default <target dir>/bench).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

smoke=0
for a in "$@"; do [ "$a" = "--smoke" ] && smoke=1; done
profile=${BENCH_PROFILE:-$([ $smoke = 1 ] && echo test || echo release)}

echo "== bench: tools"
need_apt=()
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || need_apt+=(nginx)
command -v wrk >/dev/null 2>&1 || need_apt+=(wrk)
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    # Keep packaged services (prometheus, nginx) from starting during install: tests and the
    # benchmark start their own on loopback ports.
    rcd=/usr/sbin/policy-rc.d
    own_rcd=0
    if [ ! -e "$rcd" ]; then printf '#!/bin/sh\nexit 101\n' > "$rcd"; chmod +x "$rcd"; own_rcd=1; fi
    apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
    if [ "$own_rcd" = 1 ]; then rm -f "$rcd"; fi
    # The package's own service is not wanted: the harness starts its own nginx on loopback.
    if [[ " ${need_apt[*]} " == *" nginx "* ]]; then
      (service nginx stop || systemctl stop nginx || true) >/dev/null 2>&1
    fi
  else
    echo "missing ${need_apt[*]}: run as root or install them" >&2
    exit 1
  fi
fi
nginx_bin=$(command -v nginx || echo /usr/sbin/nginx)
"$nginx_bin" -v 2>&1
wrk -v 2>&1 | head -1 || true
python3 --version

echo "== bench: build ($profile)"
target_dir=${CARGO_TARGET_DIR:-$root/target}
if [ "$profile" = release ]; then
  cargo build --release --locked --bin elicitgate --example bench_upstream
  bin_dir=$target_dir/release
else
  # `dev` and `test` both write to target/debug.
  cargo build --profile "$profile" --locked --bin elicitgate --example bench_upstream
  bin_dir=$target_dir/debug
fi
# A gateway binary built elsewhere is measured instead of the one built above; the mock
# upstream stays the profile's.
gateway_bin=${ELICITGATE_BIN:-$bin_dir/elicitgate}

# Each idle stream costs the proxy two descriptors; go as high as the hard limit allows.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
echo "open files limit: $(ulimit -n)"

out=${BENCH_OUT:-$target_dir/bench}
echo "== bench: run (output in $out)"
exec python3 "$root/bench/harness.py" \
  --gateway-bin "$gateway_bin" \
  --upstream-bin "$bin_dir/examples/bench_upstream" \
  --nginx-bin "$nginx_bin" \
  --out "$out" \
  "$@"
