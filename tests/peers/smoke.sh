#!/usr/bin/env bash
# Smoke test for the elicitgate test peers: every client against every server, directly (no gateway),
# over Streamable HTTP, stdio (the client spawns the server) and the deprecated HTTP+SSE transport.
#
#   tests/peers/smoke.sh
#
# Needs: tests/peers/python/.venv (pip install -r python/requirements.txt) and tests/peers/node/node_modules
# (npm ci). Override the interpreters with PEER_PYTHON=... / PEER_NODE=... . Exit 0 iff every check passed.
set -u

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PY="${PEER_PYTHON:-$HERE/python/.venv/bin/python}"
NODE="${PEER_NODE:-node}"
CLIENT_TIMEOUT=20   # seconds, passed to the clients (their own overall timeout)
HARD_TIMEOUT=40     # seconds, coreutils timeout around every client run
WORK="$(mktemp -d "${TMPDIR:-/tmp}/peers-smoke.XXXXXX")"
PIDS=()

cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null; done
  sleep 0.2
  for pid in "${PIDS[@]}"; do kill -9 "$pid" 2>/dev/null; done
  rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

[ -x "$PY" ] || { echo "missing $PY (python3 -m venv $HERE/python/.venv && $HERE/python/.venv/bin/pip install -r $HERE/python/requirements.txt)"; exit 2; }
[ -d "$HERE/node/node_modules/@modelcontextprotocol/sdk" ] || { echo "missing node_modules (cd $HERE/node && npm ci)"; exit 2; }

# start_server NAME CMD... -> sets PORT_<NAME>
start_server() {
  local name="$1"; shift
  "$@" >"$WORK/$name.out" 2>"$WORK/$name.err" &
  PIDS+=("$!")
  local i port=""
  for i in $(seq 1 150); do
    port="$(awk '$1=="READY"{print $2; exit}' "$WORK/$name.out" 2>/dev/null)"
    [ -n "$port" ] && break
    sleep 0.1
  done
  if [ -z "$port" ]; then echo "server $name did not become ready"; cat "$WORK/$name.err"; exit 2; fi
  printf -v "PORT_$name" '%s' "$port"
  echo "server $name ready on port $port"
}

start_server py timeout 600 "$PY" "$HERE/python/server.py" --port 0
start_server node timeout 600 "$NODE" "$HERE/node/server.mjs" --port 0
start_server py_sse timeout 600 "$PY" "$HERE/python/server.py" --transport sse --port 0
start_server node_sse timeout 600 "$NODE" "$HERE/node/server.mjs" --transport sse --port 0

PASS=0
FAIL=0

# check CASE ERA OUTPUT -> validates one client JSON line
check() {
  "$PY" - "$1" "$2" "$3" <<'PYEOF'
import json, sys
case, era, raw = sys.argv[1], sys.argv[2], sys.argv[3]
lines = [l for l in raw.splitlines() if l.strip()]
assert len(lines) == 1, f"expected exactly one stdout line, got {len(lines)}: {raw!r}"
o = json.loads(lines[0])
assert o.get("ok") is True, f"ok is not true: {o}"
r, el = o["result"], o["elicitations"]
if case == "echo":
    assert r == "hello peers", r
    assert el == [], el
    sys.exit(0)
assert len(el) == 1, el
e = el[0]
if case.startswith("deploy"):
    assert e["mode"] == "form" and e["message"] == "Choose the deployment target", e
    assert e["requestedSchema"]["properties"]["env"]["enum"] == ["staging", "production"], e
    action = case.split("_")[1]
    assert r["action"] == action, r
    if action == "accept":
        assert r["content"] == {"env": "staging", "confirm": True}, r
    else:
        assert r.get("content") in (None, {}), r
elif case == "login":
    assert e["mode"] == "form" and e["message"] == "Enter your password", e
    assert r == {**r, "action": "accept", "content": {"password": "hunter2"}}, r
elif case == "connect_ok":
    assert e["mode"] == "url" and e["url"] == "https://auth.example.com/connect?flow=abc", e
    assert r["action"] == "accept" and r.get("content") is None, r
    if era == "legacy":
        eid = e["elicitationId"]
        assert r["elicitationId"] == eid, (r, eid)
        assert o["completions"] == [eid], o["completions"]
    else:
        assert "elicitationId" not in e and o["completions"] == [], o
else:
    raise AssertionError(f"unknown case {case}")
PYEOF
}

# run_case LABEL ERA CASE CLIENT_CMD...
run_case() {
  local label="$1" era="$2" case="$3"; shift 3
  local out rc
  out="$(timeout "$HARD_TIMEOUT" "$@" 2>"$WORK/client.err")"; rc=$?
  if [ $rc -ne 0 ]; then
    echo "FAIL $label $case: client exit $rc"; sed 's/^/    /' "$WORK/client.err" | tail -5; FAIL=$((FAIL+1)); return
  fi
  if msg="$(check "$case" "$era" "$out" 2>&1)"; then
    echo "ok   $label $case"; PASS=$((PASS+1))
  else
    echo "FAIL $label $case"; echo "    $out"; echo "$msg" | tail -2 | sed 's/^/    /'; FAIL=$((FAIL+1))
  fi
}

# matrix LABEL ERA CLIENT_CMD_WITH_TARGET...   (target = --url URL [--transport sse] | --transport stdio --command CMD)
matrix() {
  local label="$1" era="$2"; shift 2
  local c=("$@" --era "$era" --timeout "$CLIENT_TIMEOUT")
  run_case "$label" "$era" deploy_accept "${c[@]}" --tool deploy --caps both --answer accept --content '{"env":"staging","confirm":true}'
  run_case "$label" "$era" deploy_decline "${c[@]}" --tool deploy --caps both --answer decline
  run_case "$label" "$era" deploy_cancel "${c[@]}" --tool deploy --caps both --answer cancel
  run_case "$label" "$era" login "${c[@]}" --tool login --caps form --answer accept --content '{"password":"hunter2"}'
  run_case "$label" "$era" connect_ok "${c[@]}" --tool connect_ok --caps both --answer accept
  run_case "$label" "$era" echo "${c[@]}" --tool echo --args '{"text":"hello peers"}' --caps none
}

# quick LABEL ERA CLIENT_CMD_WITH_TARGET...   (deploy accept + echo only: cross pairs)
quick() {
  local label="$1" era="$2"; shift 2
  local c=("$@" --era "$era" --timeout "$CLIENT_TIMEOUT")
  run_case "$label" "$era" deploy_accept "${c[@]}" --tool deploy --caps both --answer accept --content '{"env":"staging","confirm":true}'
  run_case "$label" "$era" echo "${c[@]}" --tool echo --args '{"text":"hello peers"}' --caps none
}

# q WORD -> WORD single-quoted for shlex / the Node client's shell-words split
q() { printf "'%s'" "${1//\'/\'\\\'\'}"; }

PYC=("$PY" "$HERE/python/client.py")
NODEC=("$NODE" "$HERE/node/client.mjs")
PY_URL="http://127.0.0.1:$PORT_py/mcp"
NODE_URL="http://127.0.0.1:$PORT_node/mcp"
PY_SSE_URL="http://127.0.0.1:$PORT_py_sse/sse"
NODE_SSE_URL="http://127.0.0.1:$PORT_node_sse/sse"
PY_STDIO="$(q "$PY") $(q "$HERE/python/server.py") --transport stdio"
NODE_STDIO="$(q "$NODE") $(q "$HERE/node/server.mjs") --transport stdio"

echo "--- Streamable HTTP"
matrix "py-client  x py-server   legacy" legacy "${PYC[@]}" --url "$PY_URL"
matrix "py-client  x py-server   modern" modern "${PYC[@]}" --url "$PY_URL"
matrix "py-client  x node-server legacy" legacy "${PYC[@]}" --url "$NODE_URL"
matrix "node-client x node-server legacy" legacy "${NODEC[@]}" --url "$NODE_URL"
matrix "node-client x py-server   legacy" legacy "${NODEC[@]}" --url "$PY_URL"

echo "--- stdio (client spawns the server)"
matrix "stdio py-client  x py-server   legacy" legacy "${PYC[@]}" --transport stdio --command "$PY_STDIO"
matrix "stdio py-client  x py-server   modern" modern "${PYC[@]}" --transport stdio --command "$PY_STDIO"
matrix "stdio node-client x node-server legacy" legacy "${NODEC[@]}" --transport stdio --command "$NODE_STDIO"
quick "stdio py-client  x node-server legacy" legacy "${PYC[@]}" --transport stdio --command "$NODE_STDIO"
quick "stdio node-client x py-server   legacy" legacy "${NODEC[@]}" --transport stdio --command "$PY_STDIO"

echo "--- HTTP+SSE (deprecated 2024-11-05 transport)"
matrix "sse   node-client x node-server legacy" legacy "${NODEC[@]}" --transport sse --url "$NODE_SSE_URL"
matrix "sse   py-client  x py-server   legacy" legacy "${PYC[@]}" --transport sse --url "$PY_SSE_URL"
quick "sse   py-client  x py-server   modern" modern "${PYC[@]}" --transport sse --url "$PY_SSE_URL"
quick "sse   py-client  x node-server legacy" legacy "${PYC[@]}" --transport sse --url "$NODE_SSE_URL"
quick "sse   node-client x py-server   legacy" legacy "${NODEC[@]}" --transport sse --url "$PY_SSE_URL"

echo "passed: $PASS  failed: $FAIL"
[ "$FAIL" -eq 0 ]
