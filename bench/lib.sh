# Shell helpers shared by bench/profile.sh and bench/instructions.sh (sourced, not run).

# A free TCP port on 127.0.0.1.
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# Initialises an MCP session (legacy era, form elicitation declared) through the proxy at
# 127.0.0.1:$1 and prints its Mcp-Session-Id.
bench_session() {
  curl -s -D - -o /dev/null "http://127.0.0.1:$1/mcp" -H 'content-type: application/json' \
    -H 'accept: application/json, text/event-stream' \
    -d '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{"form":{}}},"clientInfo":{"name":"bench","version":"0"}}}' \
    | tr -d '\r' | awk -F': ' 'tolower($1)=="mcp-session-id"{print $2}'
}
