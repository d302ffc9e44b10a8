#!/usr/bin/env bash
# The container image, built and run for real with Debian's podman, nothing pulled:
#   .ci/image.sh STRIPPED_BINARY
#
# 1. A base assembled here, standing in for gcr.io/distroless/cc-debian12:nonroot: glibc and
#    libgcc from this Debian 12, the CA bundle, /etc/passwd and /etc/group with `nonroot`
#    (65532), an empty /tmp; no shell, no package manager. Imported, not pulled.
# 2. The runtime image built from the Dockerfile's own final stage, with two lines swapped: its
#    `FROM` names the local base, and its `COPY --from=build` takes the binary from the build
#    context. Every other instruction (USER, EXPOSE, ENTRYPOINT, CMD, LABEL, the default
#    configuration) is the Dockerfile's, so the two recipes cannot drift apart; the image's
#    config is then checked against the Dockerfile's lines.
# 3. Run as users run it: read-only root, uid 65532, host network (loopback only), the
#    configuration mounted read-only. Checked: /healthz; one MCP call whose elicitation is
#    blocked (the client never sees it, the server gets the gateway's answer); a drain on
#    SIGTERM ending with exit code 0.
# Podman runs rootful with runc and the cgroupfs manager, and without default ulimits (this
# sandbox may not raise them): a containers.conf of its own, not the machine's.
set -euo pipefail
bin=$(realpath "$1")
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
name="elicitgate-ci-$$"
upstream_pid=""
cleanup() {
  podman rm -f "$name" >/dev/null 2>&1 || true
  [ -n "$upstream_pid" ] && kill "$upstream_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "image: $*" >&2; podman logs "$name" 2>&1 | tail -n 20 >&2 || true; exit 1; }

cat > "$work/containers.conf" <<'EOF'
[containers]
default_ulimits = []
[engine]
cgroup_manager = "cgroupfs"
runtime = "runc"
EOF
export CONTAINERS_CONF="$work/containers.conf"

# 1. The base.
base="$work/base"
mkdir -p "$base/lib/x86_64-linux-gnu" "$base/lib64" "$base/etc/ssl/certs" "$base/tmp" \
         "$base/home/nonroot"
for lib in $(ldd "$bin" | awk '/=> \//{print $3}'); do cp -L "$lib" "$base/lib/x86_64-linux-gnu/"; done
cp -L /lib64/ld-linux-x86-64.so.2 "$base/lib64/"
cp -L /etc/ssl/certs/ca-certificates.crt "$base/etc/ssl/certs/"
printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' \
  > "$base/etc/passwd"
printf 'root:x:0:\nnonroot:x:65532:\n' > "$base/etc/group"
chmod 1777 "$base/tmp"
chown 65532:65532 "$base/home/nonroot"
tar -C "$base" -cf "$work/base.tar" .
podman import -q "$work/base.tar" localhost/elicitgate-base:ci >/dev/null

# 2. The runtime stage of the Dockerfile, on that base.
ctx="$work/context"
mkdir -p "$ctx/deploy/docker"
cp "$bin" "$ctx/elicitgate"
cp "$root/deploy/docker/elicitgate.yaml" "$ctx/deploy/docker/"
awk 'seen{print} /^FROM .* AS build/{next} /^FROM /{seen=1; print}' "$root/Dockerfile" \
  | awk '!done && /^FROM /{print "FROM localhost/elicitgate-base:ci"; done=1; next} {print}' \
  | sed 's|^COPY --from=build /elicitgate |COPY elicitgate |' > "$ctx/Containerfile"
grep -q '^COPY elicitgate /usr/local/bin/elicitgate' "$ctx/Containerfile" \
  || fail "the Dockerfile's runtime stage no longer copies the binary as expected"
podman build -q --network none -t localhost/elicitgate:ci -f "$ctx/Containerfile" "$ctx" >/dev/null

# The image's config is the Dockerfile's.
want_user=$(awk '/^USER /{print $2}' "$root/Dockerfile" | tail -n 1)
got_user=$(podman image inspect localhost/elicitgate:ci --format '{{.Config.User}}')
[ "$got_user" = "$want_user" ] || fail "user $got_user, the Dockerfile says $want_user"
got_entry=$(podman image inspect localhost/elicitgate:ci --format '{{json .Config.Entrypoint}}')
grep -qxF "ENTRYPOINT $got_entry" "$root/Dockerfile" || fail "entrypoint $got_entry differs"
got_cmd=$(podman image inspect localhost/elicitgate:ci --format '{{json .Config.Cmd}}')
grep -qxF "CMD $(printf '%s' "$got_cmd" | sed 's/,/, /g')" "$root/Dockerfile" \
  || fail "cmd $got_cmd differs from the Dockerfile's"
podman image inspect localhost/elicitgate:ci --format '{{index .Config.Labels "org.opencontainers.image.licenses"}}' \
  | grep -qx 'Apache-2.0' || fail "the OCI labels are missing"
echo "image: built from the Dockerfile's runtime stage on a local base (user $got_user, entrypoint $got_entry)"

# 3. Run it. An MCP server on loopback whose tool call asks for a password; it records the
# gateway's answer.
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
up_port=$(port); gw_port=$(port); admin_port=$(port)
cat > "$work/upstream.py" <<'EOF'
import json, sys
from http.server import BaseHTTPRequestHandler, HTTPServer
log = open(sys.argv[2], "a")
class H(BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        method = body.get("method")
        if method == "initialize":
            out = json.dumps({"jsonrpc": "2.0", "id": body["id"], "result": {
                "protocolVersion": "2025-11-25", "capabilities": {}}}).encode()
            self.send_response(200); self.send_header("content-type", "application/json")
            self.send_header("mcp-session-id", "s-1"); self.send_header("content-length", str(len(out)))
            self.end_headers(); self.wfile.write(out); return
        if method == "tools/call":
            ask = {"jsonrpc": "2.0", "id": "p-1", "method": "elicitation/create", "params": {
                "message": "Sign in", "requestedSchema": {"type": "object", "properties": {
                    "password": {"type": "string"}}}}}
            done = {"jsonrpc": "2.0", "id": body["id"], "result": {"content": []}}
            out = "".join("event: message\ndata: %s\n\n" % json.dumps(m) for m in (ask, done)).encode()
            self.send_response(200); self.send_header("content-type", "text/event-stream")
            self.send_header("content-length", str(len(out))); self.end_headers(); self.wfile.write(out); return
        log.write(json.dumps(body) + "\n"); log.flush()
        self.send_response(202); self.send_header("content-length", "0"); self.end_headers()
HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
EOF
python3 "$work/upstream.py" "$up_port" "$work/answers.jsonl" &
upstream_pid=$!
# The image's own default configuration, pointed at this host's ports from the environment
# (a list entry overridden by index, as users do).
podman run -d --name "$name" --read-only --network host \
  -e "ELICITGATE__LISTEN=127.0.0.1:$gw_port" -e "ELICITGATE__ADMIN_LISTEN=127.0.0.1:$admin_port" \
  -e "ELICITGATE__TIMEOUTS__SHUTDOWN_GRACE=10s" \
  -e "ELICITGATE__ROUTES__0__UPSTREAM=http://127.0.0.1:$up_port/mcp" \
  localhost/elicitgate:ci >/dev/null
for _ in $(seq 1 100); do
  curl -fsS "http://127.0.0.1:$admin_port/healthz" >/dev/null 2>&1 && break
  sleep 0.1
done
curl -fsS "http://127.0.0.1:$admin_port/healthz" >/dev/null || fail "no /healthz"
[ "$(podman inspect "$name" --format '{{.Config.User}}')" = 65532:65532 ] || fail "not uid 65532"
post() {
  curl -sS -D "$work/headers" -H 'content-type: application/json' \
    -H 'accept: application/json, text/event-stream' "$@" "http://127.0.0.1:$gw_port/mcp"
}
post -d '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"ci","version":"1"}}}' >/dev/null
call=$(post -H 'mcp-session-id: s-1' -H 'mcp-protocol-version: 2025-11-25' \
  -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sign_in"}}')
printf '%s' "$call" | grep -q '"id": *1' || fail "the call did not complete: $call"
if printf '%s' "$call" | grep -q 'elicitation/create'; then fail "the blocked elicitation reached the client"; fi
for _ in $(seq 1 50); do grep -q 'form.secret' "$work/answers.jsonl" 2>/dev/null && break; sleep 0.1; done
grep -q '"id": "p-1"' "$work/answers.jsonl" && grep -q 'form.secret' "$work/answers.jsonl" \
  || fail "the server was not answered for its blocked elicitation"
echo "image: /healthz ok; the password form was blocked and its server answered"

# SIGTERM: the gateway drains and exits 0 within its grace.
podman stop -t 20 "$name" >/dev/null
code=$(podman inspect "$name" --format '{{.State.ExitCode}}')
[ "$code" = 0 ] || fail "exit code $code after SIGTERM"
# Read the logs whole first: `grep -q` closing the pipe early makes `podman logs` die of
# SIGPIPE, which pipefail reports as a failure although the line was there.
logs=$(podman logs "$name" 2>&1)
grep -q 'drained' <<<"$logs" || fail "no drain in the logs"
echo "image: drained on SIGTERM, exit 0"
