#!/usr/bin/env python3
"""elicitgate differential test: the official Python MCP SDK (`mcp` 2.x) as an oracle.

    diff_client.py --url http://127.0.0.1:PORT/mcp --cases FILE [--concurrency 8] [--timeout 5]
    diff_client.py --command "SERVER COMMAND" --cases FILE [--accept-colour] ...   (stdio)

With --command, every case spawns that command (shell words) with the SDK's stdio client
(`stdio_client(StdioServerParameters)` + `ClientSession` for legacy cases,
`Client(StdioServerParameters, mode="2026-07-28")` for modern ones) instead of connecting to
--url. With --accept-colour, a form asking only for `colour` is answered
`accept {"colour": "blue"}` (the others are declined), so the server can report what reached it.

FILE holds one JSON object per line (the output of `hostile_upstream.py --list`); each case is
run in a fresh session, concurrently up to --concurrency:

  * legacy cases: `ClientSession` over `streamable_http_client`, `initialize` (the SDK declares
    `{"elicitation": {"form": {}, "url": {}}}` because an elicitation callback is set), then
    `tools/call <case name>`;
  * modern cases (2026-07-28): `Client(url, mode="2026-07-28")`, whose multi-round-trip driver
    hands every `inputRequests` entry to the same callback and retries.

The elicitation callback records what the user would be shown and answers `decline`. A
`-32042` error is surfaced the way an application reads it with the SDK's own helper
(`UrlElicitationRequiredError.from_error`). One JSON line per case on stdout:

  {"case": NAME, "client": "python", "surfaced": [{"via": "callback"|"error-32042", "mode": ...,
   "message": ..., "url": ..., "props": [...]}], "call": "ok"|"error"|"timeout",
   "detail": "...", "answer": <what the upstream says it got for its elicitation>, "ms": N}

A case ends at --timeout seconds, or 1.5 s after an elicitation was surfaced (whichever is
first), so nothing hangs. Exit status 0 unless the script itself crashes.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shlex
import sys
import time
from typing import Any

import anyio
import mcp_types as types
from mcp import Client, ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError, UrlElicitationRequiredError

AFTER_SURFACED = 1.5
ACCEPTED_CONTENT = {"colour": "blue"}


def emit(obj: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj, separators=(",", ":"), ensure_ascii=False) + "\n")
    sys.stdout.flush()


def describe(params: Any, via: str) -> dict[str, Any]:
    """What the user is shown: mode, message, the URL or the form's property names."""
    if isinstance(params, dict):
        mode = params.get("mode") or "form"
        rec: dict[str, Any] = {"via": via, "mode": mode, "message": params.get("message")}
        if params.get("url") is not None:
            rec["url"] = params.get("url")
        schema = params.get("requestedSchema")
    else:
        mode = getattr(params, "mode", None) or "form"
        rec = {"via": via, "mode": mode, "message": getattr(params, "message", None)}
        if getattr(params, "url", None) is not None:
            rec["url"] = params.url
        schema = getattr(params, "requested_schema", None)
    if schema is not None:
        props = schema.get("properties") if isinstance(schema, dict) else getattr(schema, "properties", None)
        rec["props"] = sorted((props or {}).keys())
    return rec


def find_mcp_error(exc: BaseException) -> MCPError | None:
    if isinstance(exc, MCPError):
        return exc
    for sub in getattr(exc, "exceptions", None) or ():
        found = find_mcp_error(sub)
        if found is not None:
            return found
    return None


def leaf(exc: BaseException) -> BaseException:
    while getattr(exc, "exceptions", None):
        exc = exc.exceptions[0]  # type: ignore[attr-defined]
    return exc


def short(s: str, n: int = 160) -> str:
    s = " ".join(s.split())
    return s if len(s) <= n else s[: n - 1] + "…"


async def run_case(url: str | None, case: dict[str, Any], timeout: float, command: str | None = None, accept_colour: bool = False) -> dict[str, Any]:
    name = case["name"]
    rec: dict[str, Any] = {"case": name, "client": "python", "surfaced": [], "call": "timeout", "detail": "", "answer": None}
    started = time.monotonic()
    surfaced = anyio.Event()

    async def on_elicit(ctx: Any, params: Any) -> Any:
        shown = describe(params, "callback")
        rec["surfaced"].append(shown)
        surfaced.set()
        if accept_colour and shown.get("mode") == "form" and shown.get("props") == ["colour"]:
            rec["sent"] = {"action": "accept", "content": ACCEPTED_CONTENT}
            return types.ElicitResult(action="accept", content=dict(ACCEPTED_CONTENT))
        return types.ElicitResult(action="decline")

    def took_result(result: Any) -> None:
        rec["call"] = "ok"
        text = next((c.text for c in getattr(result, "content", []) or [] if isinstance(c, types.TextContent)), None)
        try:
            parsed = json.loads(text) if text else None
        except ValueError:
            parsed = text
        if isinstance(parsed, dict):
            rec["answer"] = parsed.get("answer")
            if "answer_raw" in parsed:
                rec["answer_raw"] = parsed.get("answer_raw")
        rec["detail"] = short(f"result isError={getattr(result, 'is_error', None)}")

    async def call() -> None:
        try:
            stdio = None
            if command is not None:
                argv = shlex.split(command)
                stdio = StdioServerParameters(command=argv[0], args=argv[1:], env=dict(os.environ))
            if case["era"] == "modern":
                client = Client(stdio if stdio is not None else url, mode="2026-07-28", elicitation_callback=on_elicit, read_timeout_seconds=timeout, cache=None)
                async with client:
                    took_result(await client.call_tool(name, {}))
            elif stdio is not None:
                async with stdio_client(stdio) as (read, write):
                    async with ClientSession(read, write, read_timeout_seconds=timeout, elicitation_callback=on_elicit) as session:
                        await session.initialize()
                        took_result(await session.call_tool(name, {}))
            else:
                async with streamable_http_client(url) as (read, write):
                    async with ClientSession(read, write, read_timeout_seconds=timeout, elicitation_callback=on_elicit) as session:
                        await session.initialize()
                        took_result(await session.call_tool(name, {}))
        except Exception as exc:  # noqa: BLE001 - every failure is recorded
            rec["call"] = "error"
            err = find_mcp_error(exc)
            if err is not None:
                rec["detail"] = short(f"MCPError {err.error.code}: {err.error.message}")
                if err.error.code == types.URL_ELICITATION_REQUIRED:
                    # What an application does with the SDK's own helper.
                    try:
                        required = UrlElicitationRequiredError.from_error(err.error)
                        for el in required.elicitations:
                            rec["surfaced"].append(describe(el, "error-32042"))
                        if required.elicitations:
                            surfaced.set()
                    except Exception as e2:  # noqa: BLE001
                        rec["detail"] += short(f" (from_error failed: {type(e2).__name__}: {e2})")
            else:
                root = leaf(exc)
                rec["detail"] = short(f"{type(root).__name__}: {root}")

    async with anyio.create_task_group() as tg:
        scope = anyio.CancelScope(deadline=anyio.current_time() + timeout)

        async def guarded() -> None:
            with scope:
                await call()
            tg.cancel_scope.cancel()

        async def early_end() -> None:
            await surfaced.wait()
            await anyio.sleep(AFTER_SURFACED)
            if rec["call"] == "timeout":
                rec["detail"] = f"ended {AFTER_SURFACED}s after the elicitation"
            scope.cancel()

        tg.start_soon(guarded)
        tg.start_soon(early_end)
    rec["ms"] = int((time.monotonic() - started) * 1000)
    return rec


async def main_async(args: argparse.Namespace) -> None:
    cases = [json.loads(line) for line in open(args.cases, encoding="utf-8") if line.strip()]
    limiter = anyio.CapacityLimiter(args.concurrency)

    async def one(case: dict[str, Any]) -> None:
        async with limiter:
            try:
                rec = await run_case(args.url, case, args.timeout, args.command, args.accept_colour)
            except BaseException as exc:  # noqa: BLE001 - a crash in one case is a record, not an abort
                if isinstance(exc, anyio.get_cancelled_exc_class()):
                    raise
                rec = {"case": case["name"], "client": "python", "surfaced": [], "call": "crash", "detail": short(repr(leaf(exc)))}
            emit(rec)

    async with anyio.create_task_group() as tg:
        for case in cases:
            tg.start_soon(one, case)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url")
    ap.add_argument("--command", help="stdio: the server command line (shell words), spawned per case")
    ap.add_argument("--accept-colour", action="store_true", help="answer a colour-only form accept {colour: blue}")
    ap.add_argument("--cases", required=True, help="JSON lines as printed by hostile_upstream.py --list")
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--timeout", type=float, default=5.0, help="per case, seconds")
    ap.add_argument("--debug", action="store_true", help="SDK logs on stderr")
    args = ap.parse_args()
    if (args.url is None) == (args.command is None):
        ap.error("give exactly one of --url and --command")
    logging.basicConfig(level=logging.DEBUG if args.debug else logging.CRITICAL)
    if not args.debug:
        logging.disable(logging.CRITICAL)
    anyio.run(main_async, args)


if __name__ == "__main__":
    main()
