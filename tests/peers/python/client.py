#!/usr/bin/env python3
"""elicitgate test peer: MCP client (Python SDK `mcp`) over Streamable HTTP, stdio or HTTP+SSE.

--transport http (default) --url http://host:port/mcp
--transport stdio --command "<shell words>"  (spawned with the SDK's stdio_client; full environment)
--transport sse --url http://host:port/sse    (deprecated 2024-11-05 HTTP+SSE, SDK's sse_client)
--oauth   (http) the MCP authorization flow through the SDK's OAuthClientProvider: discovery,
          dynamic registration, PKCE; the user's consent is simulated by reading the
          authorization server's redirect instead of opening a browser.

Calls one tool, answers every elicitation with --answer, prints exactly one JSON line:
  {"ok": true, "result": <first text content, JSON-parsed if JSON>, "elicitations": [...], ...}
  {"ok": false, "error": {"code": ..., "message": ..., "data": ...}, "elicitations": [...], ...}
Exit status is 0 unless the script itself crashes. See ../README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import sys
import threading
from typing import Any

import anyio
import mcp_types as types
from mcp import Client
import mcp.client.stdio as sdk_stdio
from mcp.client.session import ClientRequestContext
from mcp.shared.exceptions import MCPError

CAPS: dict[str, dict[str, Any]] = {
    "form": {"elicitation": {"form": {}}},
    "url": {"elicitation": {"url": {}}},
    "both": {"elicitation": {"form": {}, "url": {}}},
    "empty": {"elicitation": {}},
    "none": {},
}

ERA_MODE = {"legacy": "legacy", "modern": "2026-07-28", "auto": "auto"}


def emit(obj: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def declared(caps: dict[str, Any], mode: str) -> bool:
    el = caps.get("elicitation")
    if el is None:
        return False
    if mode == "url":
        return "url" in el
    return "form" in el or "url" not in el  # `{}` = form only


def error_json(err: types.ErrorData | MCPError) -> dict[str, Any]:
    e = err.error if isinstance(err, MCPError) else err
    return {"code": e.code, "message": e.message, "data": e.data}


def find_mcp_error(exc: BaseException) -> MCPError | None:
    if isinstance(exc, MCPError):
        return exc
    if isinstance(getattr(exc, "exceptions", None), (list, tuple)):  # (Base)ExceptionGroup
        for sub in exc.exceptions:  # type: ignore[attr-defined]
            found = find_mcp_error(sub)
            if found is not None:
                return found
    return None


def leaf(exc: BaseException) -> BaseException:
    while isinstance(getattr(exc, "exceptions", None), (list, tuple)) and exc.exceptions:  # type: ignore[attr-defined]
        exc = exc.exceptions[0]  # type: ignore[attr-defined]
    return exc


class CapsClient(Client):
    """`Client` whose capability ad is exactly `forced_caps`.

    The SDK derives the ad from which callbacks are set: with an elicitation callback it
    always declares `{"elicitation": {"form": {}, "url": {}}}`, without one nothing.
    """

    forced_caps: dict[str, Any] = {}

    async def _build_session(self, exit_stack: Any) -> Any:  # noqa: D401 - SDK hook
        session = await super()._build_session(exit_stack)
        caps = types.ClientCapabilities.model_validate(self.forced_caps)
        session._build_capabilities = lambda _version: caps  # type: ignore[method-assign]
        return session


CHILD_PIDS: list[int] = []  # stdio server processes (own session / process group), for the hard timeout


def _track_spawns() -> None:
    """Record the pid of every process the SDK's stdio_client spawns (it starts each in a new session)."""
    original = sdk_stdio._create_platform_compatible_process  # noqa: SLF001

    async def spawn(*a: Any, **kw: Any) -> Any:
        process = await original(*a, **kw)
        CHILD_PIDS.append(process.pid)
        return process

    sdk_stdio._create_platform_compatible_process = spawn  # noqa: SLF001


def server_target(args: argparse.Namespace) -> Any:
    """What `Client(server=...)` gets for --transport."""
    if args.transport == "stdio":
        argv = shlex.split(args.command)
        # The SDK passes only HOME/LOGNAME/PATH/SHELL/TERM/USER by default; the tests' server (or the
        # gateway in front of it) may need more (RUST_LOG, PEER_*...), so the child gets our environment.
        return sdk_stdio.StdioServerParameters(command=argv[0], args=argv[1:], env=dict(os.environ))
    if args.transport == "sse":
        from mcp.client.sse import sse_client

        return sse_client(args.url, timeout=args.timeout, sse_read_timeout=args.timeout)
    if args.oauth:
        return oauth_transport(args)
    return args.url


class MemoryTokens:
    """TokenStorage in memory (one run of this script)."""

    def __init__(self) -> None:
        self.tokens = None
        self.client_info = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens) -> None:
        self.tokens = tokens

    async def get_client_info(self):
        return self.client_info

    async def set_client_info(self, client_info) -> None:
        self.client_info = client_info


def oauth_transport(args: argparse.Namespace) -> Any:
    import httpx2
    from urllib.parse import parse_qs, urlparse
    from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.auth import OAuthClientMetadata

    redirect = "http://127.0.0.1:9/callback"
    box: dict[str, Any] = {}

    async def on_redirect(url: str) -> None:
        async with httpx2.AsyncClient(follow_redirects=False) as http:
            location = (await http.get(url)).headers.get("location", "")
        query = parse_qs(urlparse(location).query)
        box["code"] = (query.get("code") or [""])[0]
        box["state"] = (query.get("state") or [None])[0]

    async def on_callback() -> AuthorizationCodeResult:
        return AuthorizationCodeResult(code=box.get("code", ""), state=box.get("state"))

    provider = OAuthClientProvider(
        server_url=args.url,
        client_metadata=OAuthClientMetadata(
            client_name="elicitgate test peer",
            redirect_uris=[redirect],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="client_secret_post",
        ),
        storage=MemoryTokens(),
        redirect_handler=on_redirect,
        callback_handler=on_callback,
    )
    http_client = httpx2.AsyncClient(auth=provider, timeout=args.timeout)
    return streamable_http_client(args.url, http_client=http_client)


async def run(args: argparse.Namespace, out: dict[str, Any]) -> None:
    caps = CAPS[args.caps]
    content = json.loads(args.content) if args.content else None
    tool_args = json.loads(args.args) if args.args else {}
    elicitations: list[dict[str, Any]] = out["elicitations"]
    completions: list[str] = out["completions"]
    refusals: list[types.ErrorData] = []

    async def on_elicit(ctx: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult | types.ErrorData:
        mode = getattr(params, "mode", None) or "form"
        rec: dict[str, Any] = {"mode": mode, "message": params.message}
        if isinstance(params, types.ElicitRequestURLParams):
            rec["url"] = params.url
            if params.elicitation_id is not None:
                rec["elicitationId"] = params.elicitation_id
        else:
            rec["requestedSchema"] = params.requested_schema
        rec["declared"] = declared(caps, mode)
        elicitations.append(rec)
        if "elicitation" not in caps:
            # Same answer the SDK's default callback gives when no elicitation support is configured.
            err = types.ErrorData(code=types.INVALID_REQUEST, message="Elicitation not supported")
        elif not rec["declared"]:
            # 2025-11-25: a client MUST answer an undeclared mode with -32602.
            err = types.ErrorData(code=types.INVALID_PARAMS, message=f"Client does not support {mode}-mode elicitation requests")
        else:
            err = None
        if err is not None:
            rec["answer"] = {"error": error_json(err)}
            refusals.append(err)
            return err
        rec["answer"] = args.answer
        if args.answer == "accept":
            if mode == "url":
                return types.ElicitResult(action="accept")
            return types.ElicitResult(action="accept", content=content if content is not None else {})
        return types.ElicitResult(action=args.answer)

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ElicitCompleteNotification):
            completions.append(message.params.elicitation_id)
        if not isinstance(message, Exception):
            out["notifications"].append(getattr(message, "method", type(message).__name__))
        if isinstance(message, Exception):
            out.setdefault("transportErrors", []).append(f"{type(message).__name__}: {message}")

    CapsClient.forced_caps = caps
    client = CapsClient(
        server_target(args),
        mode=ERA_MODE[args.era],
        elicitation_callback=on_elicit,
        message_handler=on_message,
        client_info=types.Implementation(name="elicitgate-peer-python-client", version="1.0.0"),
        read_timeout_seconds=args.timeout,
        cache=None,
    )
    try:
        async with client:
            out["protocolVersion"] = client.protocol_version
            result = await client.call_tool(args.tool, tool_args)
            text = next((c.text for c in result.content if isinstance(c, types.TextContent)), None)
            try:
                parsed: Any = json.loads(text) if text is not None else None
            except ValueError:
                parsed = text
            out["ok"] = True
            out["result"] = parsed
            if result.is_error:
                out["isError"] = True
    except Exception as exc:  # noqa: BLE001 - every failure becomes the JSON line
        mcp_err = find_mcp_error(exc)
        out["ok"] = False
        if mcp_err is not None:
            out["error"] = error_json(mcp_err)
            # On 2026-07-28 a refused input request never reaches the server: the SDK raises it locally.
            if any(r.code == mcp_err.error.code and r.message == mcp_err.error.message for r in refusals):
                out["error"]["local"] = True
        else:
            root = leaf(exc)
            out["error"] = {"code": None, "message": f"{type(root).__name__}: {root}", "data": None, "local": True}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--transport", choices=["http", "stdio", "sse"], default="http")
    ap.add_argument("--url", default=None, help="http: the MCP endpoint; sse: the SSE GET endpoint (e.g. .../sse)")
    ap.add_argument("--command", default=None, help="stdio: server command line, split with shlex")
    ap.add_argument("--tool", required=True)
    ap.add_argument("--args", default=None, help="tool arguments as a JSON object")
    ap.add_argument("--era", choices=sorted(ERA_MODE), default="legacy",
                    help="legacy = initialize handshake; modern = pin 2026-07-28 (stateless, MRTR); auto = probe")
    ap.add_argument("--caps", choices=sorted(CAPS), default="both")
    ap.add_argument("--answer", choices=["accept", "decline", "cancel"], default="accept")
    ap.add_argument("--content", default=None, help="JSON object sent as content on a form accept")
    ap.add_argument("--timeout", type=float, default=30.0, help="overall timeout in seconds")
    ap.add_argument("--oauth", action="store_true", help="http: authorize with OAuth first")
    args = ap.parse_args()
    if args.transport == "stdio":
        try:
            words = shlex.split(args.command or "")
        except ValueError as e:
            ap.error(f"--command: {e}")
        if not words:
            ap.error("--transport stdio needs --command")
        _track_spawns()
    elif not args.url:
        ap.error(f"--transport {args.transport} needs --url")

    out: dict[str, Any] = {"ok": False, "elicitations": [], "completions": [], "notifications": []}
    lock = threading.Lock()
    printed = False

    def finish(obj: dict[str, Any]) -> None:
        nonlocal printed
        with lock:
            if not printed:
                printed = True
                emit(obj)

    # stdio shutdown (stdin EOF, 2 s grace, SIGTERM to the group, 2 s, SIGKILL) is bounded by ~6 s.
    grace = 10 if args.transport == "stdio" else 5

    def hard_timeout(*_: Any) -> None:  # backstop if cancellation itself hangs
        out["ok"] = False
        out["error"] = {"code": None, "message": f"hard timeout after {args.timeout + grace}s", "data": None, "local": True}
        finish(out)
        for pid in CHILD_PIDS:
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                pass
        os._exit(0)

    signal.signal(signal.SIGALRM, hard_timeout)
    signal.alarm(int(args.timeout) + grace)

    async def bounded() -> None:
        with anyio.move_on_after(args.timeout) as scope:
            await run(args, out)
        if scope.cancelled_caught:
            out["ok"] = False
            out["error"] = {"code": None, "message": f"timeout after {args.timeout}s", "data": None, "local": True}
            out.pop("result", None)

    anyio.run(bounded)
    signal.alarm(0)
    finish(out)


if __name__ == "__main__":
    main()
