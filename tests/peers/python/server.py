#!/usr/bin/env python3
"""elicitgate test peer: MCP server (Python SDK `mcp`) over Streamable HTTP, stdio or HTTP+SSE.

--transport http (default): one endpoint serves both eras (the SDK routes on the
`MCP-Protocol-Version` header):
  * legacy (2025-xx): initialize + Mcp-Session-Id, stateful session, elicitation sent as a
    server->client `elicitation/create` request on the tools/call POST's SSE stream;
  * modern (2026-07-28): stateless, elicitation returned as an `input_required` result
    (`inputRequests` + sealed `requestState`), answered by the client's retry.
--transport stdio: newline-delimited JSON-RPC on stdin/stdout; the client's first request picks
  the era for the whole process (the SDK's dual-era loop): `initialize` => legacy, a request
  carrying the 2026-07-28 `_meta` envelope => modern. Nothing but protocol goes to stdout.
--transport sse: the deprecated 2024-11-05 HTTP+SSE transport (GET --path, default /sse;
  POST /messages/?session_id=<hex>); each GET stream is one connection, era picked like stdio.

HTTP transports print exactly one line `READY <port>` on stdout once listening. See ../README.md.
"""

from __future__ import annotations

import argparse
import json
import logging
import contextvars
import socket
import sys
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types as types
import uvicorn
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared._context_streams import ContextReceiveStream
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

# --------------------------------------------------------------------------- fixtures

FORMS: dict[str, tuple[str, dict[str, Any]]] = {
    "deploy": (
        "Choose the deployment target",
        {
            "type": "object",
            "properties": {
                "env": {"type": "string", "title": "Environment", "enum": ["staging", "production"]},
                "confirm": {"type": "boolean", "title": "Confirm"},
            },
            "required": ["env"],
        },
    ),
    "github_user": (
        "Enter your GitHub username",
        {
            "type": "object",
            "properties": {"username": {"type": "string", "title": "GitHub username"}},
            "required": ["username"],
        },
    ),
    "login": (
        "Enter your password",
        {
            "type": "object",
            "properties": {"password": {"type": "string", "title": "Password"}},
            "required": ["password"],
        },
    ),
    "api_key": (
        "Enter your API key",
        {
            "type": "object",
            "properties": {"api_key": {"type": "string", "title": "API key"}},
            "required": ["api_key"],
        },
    ),
}

URLS: dict[str, tuple[str, str, bool]] = {
    # tool -> (message, url, send notifications/elicitation/complete after accept (legacy only))
    "connect_http": ("Connect your account", "http://auth.example.com/connect", False),
    "connect_pii": ("Connect your account", "https://auth.example.com/connect?email=alice%40example.com", False),
    "connect_ok": ("Connect your account", "https://auth.example.com/connect?flow=abc", True),
    # Per-tool policy fixtures: a connect_* tool sending the user to another host, and a
    # tool that is no connect_* tool sending a URL at all.
    "connect_elsewhere": ("Connect your account", "https://login.example.net/connect?flow=abc", False),
    "open_docs": ("Read the setup guide", "https://auth.example.com/docs/setup", False),
}

INPUT_KEY = "elicitation"  # key used in 2026-07-28 inputRequests / inputResponses

log = logging.getLogger("peer.server")


def text_result(obj: Any) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=json.dumps(obj))])


def error_result(code: int | None, message: str, data: Any = None, *, local: bool = False) -> types.CallToolResult:
    err: dict[str, Any] = {"code": code, "message": message, "data": data}
    if local:
        err["local"] = True
    return text_result({"error": err})


def elicit_result_json(result: types.ElicitResult) -> dict[str, Any]:
    return {"action": result.action, "content": result.content}


def mode_declared(caps: types.ClientCapabilities | None, mode: str) -> bool:
    """2025-11-25 rule: `elicitation: {}` means form only; url needs an explicit `url` key."""
    el = caps.elicitation if caps is not None else None
    if el is None:
        return False
    if mode == "url":
        return el.url is not None
    return el.form is not None or el.url is None


# --------------------------------------------------------------------------- tool core


class Peer:
    def __init__(self, ignore_caps: bool, sse_notify: bool) -> None:
        self.ignore_caps = ignore_caps
        self.sse_notify = sse_notify

    async def run(self, ctx: Context, tool: str, params: dict[str, Any]) -> types.CallToolResult | types.InputRequiredResult:
        """Ask the client once with `params` (wire-shaped ElicitRequest params); return what came back."""
        mode = params.get("mode", "form")
        modern = ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
        if self.sse_notify:
            # A request-related notification first: on 2026-07-28 this makes the SDK commit the
            # response to text/event-stream, so the input_required result is the stream's last event.
            await ctx.session.send_notification(
                types.LoggingMessageNotification(
                    params=types.LoggingMessageNotificationParams(level="info", data=f"{tool}: asking the user")
                ),
                related_request_id=ctx.request_context.request_id,
            )
        if not self.ignore_caps and not mode_declared(ctx.client_capabilities, mode):
            msg = f"Client did not declare {mode} elicitation (server refused to elicit)"
            if modern:
                # What a compliant 2026-07-28 server does (same as the SDK's Resolve() path).
                el = {"url": {}} if mode == "url" else {"form": {}}
                raise MCPError(
                    code=types.MISSING_REQUIRED_CLIENT_CAPABILITY,
                    message=msg,
                    data={"requiredCapabilities": {"elicitation": el}},
                )
            return error_result(None, msg, None, local=True)

        if modern:
            return self._modern(ctx, tool, params)
        return await self._legacy(ctx, params)

    def _modern(self, ctx: Context, tool: str, params: dict[str, Any]) -> types.CallToolResult | types.InputRequiredResult:
        responses = ctx.input_responses or {}
        answer = responses.get(INPUT_KEY)
        state = ctx.request_state  # plaintext: the SDK's RequestStateBoundary unsealed/verified it
        if isinstance(answer, types.ElicitResult):
            out = elicit_result_json(answer)
            out["requestState"] = state
            return text_result(out)
        if answer is not None:
            return error_result(None, f"unexpected input response type {type(answer).__name__}", None, local=True)
        wire = dict(params)
        request = types.ElicitRequest.model_validate({"method": "elicitation/create", "params": wire}, by_name=False)
        return types.InputRequiredResult(
            input_requests={INPUT_KEY: request},
            request_state=json.dumps({"tool": tool, "round": 1}),
        )

    async def _legacy(self, ctx: Context, params: dict[str, Any]) -> types.CallToolResult:
        request = types.ElicitRequest.model_validate({"method": "elicitation/create", "params": params}, by_name=False)
        try:
            # related_request_id => routed onto the tools/call POST's SSE stream (not the GET stream).
            result = await ctx.session.send_request(
                request,
                types.ElicitResult,
                metadata=_related(ctx),
            )
        except MCPError as e:
            return error_result(e.error.code, e.error.message, e.error.data)
        except Exception as e:  # e.g. a result that fails validation
            return error_result(None, f"{type(e).__name__}: {e}", None, local=True)
        return text_result(elicit_result_json(result))


def _related(ctx: Context) -> Any:
    from mcp.shared.message import ServerMessageMetadata

    return ServerMessageMetadata(related_request_id=ctx.request_context.request_id)


def build_server(peer: Peer) -> MCPServer:
    mcp = MCPServer(name="elicitgate-peer-python", version="1.0.0", log_level="WARNING")

    def form_tool(name: str) -> None:
        message, schema = FORMS[name]

        async def tool(ctx: Context) -> types.CallToolResult | types.InputRequiredResult:
            return await peer.run(ctx, name, {"mode": "form", "message": message, "requestedSchema": schema})

        tool.__name__ = name
        mcp.tool(name=name, description=f"Form elicitation fixture: {message}", structured_output=False)(tool)

    def url_tool(name: str) -> None:
        message, url, complete = URLS[name]

        async def tool(ctx: Context) -> types.CallToolResult | types.InputRequiredResult:
            modern = ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
            eid = f"{name}-{uuid.uuid4().hex[:12]}"
            params: dict[str, Any] = {"mode": "url", "message": message, "url": url}
            if not modern:
                params["elicitationId"] = eid  # required in 2025-11-25, removed in 2026-07-28
            out = await peer.run(ctx, name, params)
            if modern or not isinstance(out, types.CallToolResult):
                return out
            body = json.loads(out.content[0].text)  # type: ignore[union-attr]
            body["elicitationId"] = eid
            if complete and body.get("action") == "accept":
                # On the same POST SSE stream, before the tool result.
                await ctx.session.send_elicit_complete(eid, related_request_id=ctx.request_context.request_id)
                body["completeSent"] = True
            return text_result(body)

        tool.__name__ = name
        mcp.tool(name=name, description=f"URL elicitation fixture: {url}", structured_output=False)(tool)

    for n in FORMS:
        form_tool(n)
    for n in URLS:
        url_tool(n)

    @mcp.tool(name="echo", description="No elicitation; returns `text`.", structured_output=False)
    async def echo(text: str = "") -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])

    @mcp.tool(
        name="elicit_raw",
        description="Sends `params` verbatim as elicitation/create params (legacy) or as the inputRequests entry (2026).",
        structured_output=False,
    )
    async def elicit_raw(params: dict[str, Any], ctx: Context) -> types.CallToolResult | types.InputRequiredResult:
        try:
            return await peer.run(ctx, "elicit_raw", params)
        except MCPError:
            raise
        except Exception as e:  # params the SDK model refuses to build
            return error_result(None, f"{type(e).__name__}: {e}", None, local=True)

    return mcp


# --------------------------------------------------------------------------- era filter


def era_filter(app: Any, era: str) -> Any:
    """Optional single-era mode in front of the SDK's dual-era endpoint."""
    if era == "dual":
        return app

    async def reject(send: Any, status: int, body: dict[str, Any] | None) -> None:
        headers = [(b"content-type", b"application/json")] if body is not None else []
        if status == 405:
            headers.append((b"allow", b"POST"))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": json.dumps(body).encode() if body is not None else b""})

    async def wrapped(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        pv = next((v.decode("latin-1") for k, v in scope["headers"] if k == b"mcp-protocol-version"), None)
        is_modern = pv is not None and pv not in HANDSHAKE_PROTOCOL_VERSIONS
        if era == "legacy" and is_modern:
            await reject(send, 400, {
                "jsonrpc": "2.0", "id": None,
                "error": {"code": -32600, "message": f"Bad Request: Unsupported protocol version: {pv}"},
            })
            return
        if era == "modern" and not is_modern:
            if scope["method"] != "POST":
                await reject(send, 405, None)
                return
            await reject(send, 400, {
                "jsonrpc": "2.0", "id": None,
                "error": {"code": types.UNSUPPORTED_PROTOCOL_VERSION, "message": "Unsupported protocol version",
                          "data": {"supported": list(MODERN_PROTOCOL_VERSIONS), "requested": pv or "2025-03-26"}},
            })
            return
        await app(scope, receive, send)

    return wrapped


def _has_modern_envelope(params: dict[str, Any] | None) -> bool:
    """Same signal the SDK's dual-era loop uses: the reserved protocol-version key in `_meta`."""
    meta = (params or {}).get("_meta")
    return isinstance(meta, dict) and types.PROTOCOL_VERSION_META_KEY in meta


def _era_rejection(request: types.JSONRPCRequest, era: str) -> types.ErrorData | None:
    """The error the single-era filter answers for `request`, or None to let it through."""
    modern = request.method != "initialize" and _has_modern_envelope(request.params)
    if era == "legacy" and modern:
        pv = (request.params or {}).get("_meta", {}).get(types.PROTOCOL_VERSION_META_KEY)
        return types.ErrorData(code=types.INVALID_REQUEST, message=f"Bad Request: Unsupported protocol version: {pv}")
    if era == "modern" and not modern:
        requested = (request.params or {}).get("protocolVersion") if request.method == "initialize" else None
        return types.ErrorData(
            code=types.UNSUPPORTED_PROTOCOL_VERSION,
            message="Unsupported protocol version",
            data={"supported": list(MODERN_PROTOCOL_VERSIONS), "requested": requested or "2025-03-26"},
        )
    return None


@asynccontextmanager
async def era_filtered_stream(read_stream: Any, write_stream: Any, era: str) -> AsyncIterator[Any]:
    """Single-era mode for the stream transports (stdio, HTTP+SSE): requests of the other era are
    answered here with a JSON-RPC error and never reach the SDK (which would otherwise lock the
    connection to whichever era the first request used)."""
    if era == "dual":
        yield read_stream
        return
    raw_send, raw_receive = anyio.create_memory_object_stream[tuple[contextvars.Context, Any]](0)

    async def pump() -> None:
        async with raw_send:
            async for item in read_stream:
                ctx = getattr(read_stream, "last_context", None) or contextvars.copy_context()
                if isinstance(item, SessionMessage) and isinstance(item.message, types.JSONRPCRequest):
                    err = _era_rejection(item.message, era)
                    if err is not None:
                        log.info("era filter (%s) rejected %s", era, item.message.method)
                        try:
                            await write_stream.send(
                                SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=item.message.id, error=err))
                            )
                        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                            return
                        continue
                await raw_send.send((ctx, item))

    async with anyio.create_task_group() as tg:
        tg.start_soon(pump)
        yield ContextReceiveStream(raw_receive)
        tg.cancel_scope.cancel()


async def serve_stream(mcp: MCPServer, read_stream: Any, write_stream: Any, era: str) -> None:
    """One connection over a duplex stream pair; the SDK's dual-era loop picks the era."""
    low = mcp._lowlevel_server  # noqa: SLF001 - what MCPServer.run_stdio_async / sse_app do
    async with era_filtered_stream(read_stream, write_stream, era) as filtered:
        await low.run(filtered, write_stream, low.create_initialization_options())


def run_stdio(mcp: MCPServer, era: str) -> None:
    from mcp.server.stdio import stdio_server

    async def serve() -> None:
        # While serving, the SDK points fd 1 at stderr: stray prints cannot corrupt the wire.
        async with stdio_server() as (read_stream, write_stream):
            await serve_stream(mcp, read_stream, write_stream, era)

    try:
        anyio.run(serve)
    except KeyboardInterrupt:
        pass


def sse_app(mcp: MCPServer, sse_path: str, security: TransportSecuritySettings | None, era: str) -> Any:
    """The deprecated HTTP+SSE transport, as MCPServer.sse_app builds it, plus the era filter."""
    from mcp.server.sse import SseServerTransport
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Mount, Route

    sse = SseServerTransport(SSE_MESSAGE_PATH, security_settings=security)

    async def handle_sse(request: Request) -> Response:
        async with sse.connect_sse(request.scope, request.receive, request._send) as (read_stream, write_stream):  # noqa: SLF001
            await serve_stream(mcp, read_stream, write_stream, era)
        return Response()

    return Starlette(routes=[
        Route(sse_path, endpoint=handle_sse, methods=["GET"]),
        Mount(SSE_MESSAGE_PATH, app=sse.handle_post_message),
    ])


SSE_MESSAGE_PATH = "/messages/"  # the SDK's default; endpoint event data = /messages/?session_id=<uuid hex>


# --------------------------------------------------------------------------- main


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--transport", choices=["http", "stdio", "sse"], default="http",
                    help="http = Streamable HTTP (default); stdio; sse = deprecated 2024-11-05 HTTP+SSE")
    ap.add_argument("--port", type=int, default=0, help="0 = pick a free port (printed in READY line)")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--path", default=None, help="MCP endpoint (http, default /mcp) or SSE GET path (sse, default /sse)")
    ap.add_argument("--era", choices=["dual", "legacy", "modern"], default="dual")
    ap.add_argument("--ignore-caps", action="store_true",
                    help="elicit even when the client did not declare that mode (misbehaving server)")
    ap.add_argument("--sse-notify", action="store_true",
                    help="send one notifications/message on the request stream before eliciting (forces SSE on 2026)")
    ap.add_argument("--dns-rebinding-protection", action="store_true",
                    help="keep the SDK's Host/Origin allowlist (off by default so a proxy's Host is accepted)")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()

    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING, stream=sys.stderr)

    mcp = build_server(Peer(ignore_caps=args.ignore_caps, sse_notify=args.sse_notify))

    if args.transport == "stdio":
        run_stdio(mcp, args.era)
        return

    if args.transport == "sse":
        security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
        if args.dns_rebinding_protection:
            security = TransportSecuritySettings(
                enable_dns_rebinding_protection=True,
                allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
                allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
            )
        asgi = sse_app(mcp, args.path or "/sse", security, args.era)
    else:
        security = None if args.dns_rebinding_protection else TransportSecuritySettings(enable_dns_rebinding_protection=False)
        app = mcp.streamable_http_app(
            streamable_http_path=args.path or "/mcp",
            json_response=False,  # legacy: SSE on the POST so elicitation/create can ride it
            stateless_http=False,  # legacy: stateful sessions (Mcp-Session-Id)
            transport_security=security,
            host=args.host,
        )
        asgi = era_filter(app, args.era)

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((args.host, args.port))
    port = sock.getsockname()[1]

    config = uvicorn.Config(asgi, log_level="debug" if args.verbose else "warning", lifespan="on")
    server = uvicorn.Server(config)

    async def serve() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.serve, [sock])
            while not server.started:
                if server.should_exit:
                    return
                await anyio.sleep(0.01)
            print(f"READY {port}", flush=True)

    try:
        anyio.run(serve)
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
