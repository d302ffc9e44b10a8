#!/usr/bin/env bash
# User-space instructions per proxied request, counted by valgrind's callgrind: deterministic
# where CPU time is noisy, so small changes to the request path can be compared. Loopback only;
# every process it starts is stopped at the end.
#
#   bench/instructions.sh [elicitgate|elicitgate-redis|nginx|floor-pooled|floor-per-core] [seconds]
#
# nginx is Debian's nginx configured as bench/harness.py configures it (proxy_pass, upstream
# keep-alive, buffering off, X-Forwarded-* set, access log off), with one worker and no master
# process so that callgrind sees the one process that does the work.
# elicitgate-redis is elicitgate with `state.backend: redis` on a redis-server this script
# starts (ordinary traffic must cost the same as on the embedded state).
# BENCH_SCENARIO (small | mix, see bench/wrk_mcp.lua) picks the load; CARGO_TARGET_DIR picks
# the build measured (so two builds can be compared). elicitgate runs with `workers: 1`; the floors are examples/hyper_floor.rs. Load: wrk, 4
# connections, small JSON tools/call, after a warm-up whose instructions are not counted.
# Needs a release build (cargo build --release --bin elicitgate --example bench_upstream
# --example hyper_floor), valgrind and wrk. Writes callgrind.out and the inclusive/self
# reports to $BENCH_OUT/instructions-<target>/ and prints instructions per request.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
target=${1:-elicitgate}
seconds=${2:-5}
bin=${CARGO_TARGET_DIR:-$root/target}/release
out=${BENCH_OUT:-${CARGO_TARGET_DIR:-$root/target}/bench}/instructions-$target
rm -rf "$out" && mkdir -p "$out"
command -v valgrind >/dev/null || { echo "valgrind is not installed (apt-get install valgrind)" >&2; exit 1; }

# shellcheck source=bench/lib.sh
. "$root/bench/lib.sh"
up=$(port); gw=$(port); adm=$(port)
state=""
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT
if [ "$target" = elicitgate-redis ]; then
  rport=$(port)
  redis-server --port "$rport" --bind 127.0.0.1 --save "" --appendonly no >"$out/redis.log" 2>&1 &
  pids+=($!)
  state="state: { backend: redis, redis: { url: \"redis://127.0.0.1:$rport\" } }"
fi
cat >"$out/elicitgate.yaml" <<EOT
listen: "127.0.0.1:$gw"
admin_listen: "127.0.0.1:$adm"
workers: 1
log: { level: warn }
audit: { sink: "off" }
routes: [ { name: bench, path: /mcp, upstream: "http://127.0.0.1:$up/mcp" } ]
policies: { default: { rate: { max_per_minute: 1000000000 } } }
$state
EOT
nginx_conf() {
  mkdir -p "$out/tmp"
  cat >"$out/nginx.conf" <<EOT
worker_processes 1;
master_process off;
daemon off;
pid $out/nginx.pid;
error_log $out/nginx-error.log warn;
events { worker_connections 1024; }
http {
    access_log off;
    client_body_temp_path $out/tmp/body;
    proxy_temp_path $out/tmp/proxy;
    fastcgi_temp_path $out/tmp/fastcgi;
    uwsgi_temp_path $out/tmp/uwsgi;
    scgi_temp_path $out/tmp/scgi;
    client_max_body_size 8m;
    client_body_buffer_size 1m;
    keepalive_requests 1000000;
    keepalive_timeout 300s;
    upstream mcp {
        server 127.0.0.1:$up;
        keepalive 256;
        keepalive_requests 1000000;
        keepalive_timeout 90s;
    }
    server {
        listen 127.0.0.1:$gw backlog=4096;
        location / {
            proxy_pass http://mcp;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;
            proxy_set_header X-Forwarded-Proto \$scheme;
            proxy_buffering off;
        }
    }
}
EOT
}
case $target in
  nginx) nginx_conf; cmd=("$(command -v nginx || echo /usr/sbin/nginx)" -p "$out" -c "$out/nginx.conf" -e "$out/nginx-error.log") ;;
  elicitgate|elicitgate-redis) cmd=("$bin/elicitgate" serve --config "$out/elicitgate.yaml") ;;
  floor-pooled) cmd=("$bin/examples/hyper_floor" pooled "127.0.0.1:$gw" "127.0.0.1:$up") ;;
  floor-per-core) cmd=("$bin/examples/hyper_floor" per-core "127.0.0.1:$gw" "127.0.0.1:$up") ;;
  *) echo "unknown target $target" >&2; exit 2 ;;
esac
"$bin/examples/bench_upstream" --listen "127.0.0.1:$up" >"$out/upstream.log" 2>&1 &
pids+=($!)
valgrind --tool=callgrind --callgrind-out-file="$out/callgrind.out" "${cmd[@]}" >"$out/proxy.log" 2>&1 &
vg=$!
pids+=($vg)
for _ in $(seq 300); do
  curl -s -m 2 -X DELETE -o /dev/null "http://127.0.0.1:$gw/mcp" && break
  sleep 0.2
done
session=$(bench_session "$gw")
load() {
  BENCH_SCENARIO=${BENCH_SCENARIO:-small} BENCH_SESSION=$session wrk -t1 -c4 -d"$1s" -s bench/wrk_mcp.lua \
    "http://127.0.0.1:$gw/mcp"
}
load 2 >/dev/null
callgrind_control -z "$vg" >/dev/null
load "$seconds" >"$out/wrk.txt"
callgrind_control -d "$vg" >/dev/null
sleep 1
dump=$(ls "$out"/callgrind.out.* | sort | tail -1)
requests=$(sed -n 's/^BENCHJSON //p' "$out/wrk.txt" | python3 -c 'import json,sys; print(json.load(sys.stdin)["requests"])')
total=$(callgrind_annotate "$dump" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",","",$1); print $1}')
callgrind_annotate --inclusive=yes "$dump" >"$out/inclusive.txt" 2>/dev/null
callgrind_annotate "$dump" >"$out/self.txt" 2>/dev/null
echo "$target: $requests requests, $total instructions, $((total / requests)) per request (reports in $out)"
