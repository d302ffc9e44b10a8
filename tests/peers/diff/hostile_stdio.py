#!/usr/bin/env python3
"""elicitgate differential test: a hostile MCP server over stdio that controls every byte it writes.

Standard library only (plus the vocabulary of its sibling `hostile_upstream.py`, itself
standard library only). It reads the client's lines on stdin and writes exact bytes on stdout,
one JSON text per line (unless the case says otherwise): it answers `initialize`,
`tools/list`, and `tools/call <case>` with the case's lines.

    hostile_stdio.py                      serve one client on stdin/stdout (what a client spawns)
    hostile_stdio.py --list [--large]     print the generated cases, one JSON per line
    hostile_stdio.py --show CASE          print the bytes a case writes after `tools/call` (no answer awaited)

Case names: `carrier.payload.mods` (mods joined with `+`, `-` for none), e.g. `req.pw.crlf+nan`.

Carriers:
  req    legacy `elicitation/create` request line; the server waits <= 1.5 s for the client's
         answer (reading stdin meanwhile), then writes the tools/call result, which reports the
         answer (`answer`, compact) and the exact line that carried it (`answer_raw`)
  batch  one line holding the JSON array [elicitation/create, tools/call result]
  e42    the `-32042` URL-elicitation-required error as the response to tools/call
  ir     2026-07-28 `input_required` result as the response to tools/call (the client's retry
         carrying `inputResponses` gets the final result, reporting them and the raw retry line)

Line mods (how the case's lines are written):
  crlf      every line of the case ends `\\r\\n`
  cr        the elicitation line ends with a lone `\\r` (the next line follows it directly)
  tailnone  the elicitation is written without a line end, then the server exits (EOF)
  ws        spaces and a tab before and after the JSON text
  nl        the JSON text spread over several lines (a newline after every comma)
  u2028 u0085 ff vt fs   that character raw inside a JSON string (an unrelated `_meta.x`)
JSON mods (from hostile_upstream.py): nan inf big bigint deep130 deep200 deep1000 surr badutf8
  jbom dupmethod dupparams esc env env2 (req/batch), dupcode num1..num4 (e42: `-32042.0`,
  `-3.2042e4`, `-32042e0`, `-32042.000000000001`), dupresult duprt (ir).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import select
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import hostile_upstream as hu  # noqa: E402  (the shared vocabulary: payloads, exact JSON writer)

ANSWER_WAIT = 1.5

#: carrier -> (era, the hostile_upstream carrier whose JSON builder it uses)
CARRIERS: dict[str, tuple[str, str]] = {
    "req": ("legacy", "sse"),
    "batch": ("legacy", "batch"),
    "e42": ("legacy", "e42"),
    "ir": ("modern", "ir"),
}
LINE_MODS = ["crlf", "cr", "tailnone", "ws", "nl", "u2028", "u0085", "ff", "vt", "fs"]
JSON_MODS = [
    "nan", "inf", "big", "bigint", "deep130", "deep200", "deep1000", "surr", "badutf8", "jbom",
    "dupmethod", "dupparams", "esc", "env", "env2", "dupcode", "num1", "num2", "num3", "num4",
    "dupresult", "duprt",
]
ODD_CHARS = {"u2028", "u0085", "ff", "vt", "fs"}


def mod_applies(mod: str, carrier: str) -> bool:
    if mod in ("cr", "tailnone"):
        return carrier == "req"  # the elicitation is followed by the server's own result line
    if mod in ("dupmethod", "dupparams", "env2"):
        return carrier in ("req", "batch")
    if mod in ("dupcode", "num1", "num2", "num3", "num4"):
        return carrier == "e42"
    if mod in ("dupresult", "duprt"):
        return carrier == "ir"
    return mod in LINE_MODS or mod in JSON_MODS


#: Mods a correct gateway must pass for an allowed elicitation (valid JSON, one message a line).
BENIGN_MODS = {"crlf", "ws", "esc", "u2028", "u0085"}


class Case:
    def __init__(self, carrier: str, payload: str, mods: tuple[str, ...]):
        if carrier not in CARRIERS:
            raise ValueError(f"unknown carrier {carrier!r}")
        if payload not in hu.PAYLOADS:
            raise ValueError(f"unknown payload {payload!r}")
        if carrier == "e42" and payload not in hu.URL_ONLY:
            raise ValueError("a -32042 error carries URL-mode elicitations only")
        for m in mods:
            if m not in LINE_MODS and m not in JSON_MODS:
                raise ValueError(f"unknown mod {m!r}")
            if not mod_applies(m, carrier):
                raise ValueError(f"mod {m!r} does not apply to carrier {carrier!r}")
        self.carrier, self.payload, self.mods = carrier, payload, mods

    @property
    def name(self) -> str:
        return ".".join([self.carrier, self.payload, "+".join(self.mods) or "-"])

    @property
    def era(self) -> str:
        return CARRIERS[self.carrier][0]

    @property
    def blocked(self) -> bool:
        return hu.PAYLOADS[self.payload][0]

    @staticmethod
    def parse(name: str) -> "Case":
        parts = name.split(".")
        if len(parts) != 3:
            raise ValueError(f"case name needs 3 dot-separated parts: {name!r}")
        carrier, payload, mods = parts
        return Case(carrier, payload, () if mods == "-" else tuple(mods.split("+")))

    def meta(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "era": self.era,
            "carrier": self.carrier,
            "payload": self.payload,
            "blocked": self.blocked,
            "mods": list(self.mods),
            "transport": "stdio",
            "strict_control": not self.blocked and self.carrier != "batch" and set(self.mods) <= BENIGN_MODS,
        }

    def hu_case(self) -> Any:
        """The same case in hostile_upstream's terms (its JSON builders read payload and mods)."""
        mods = tuple(m for m in self.mods if m in JSON_MODS or m in ODD_CHARS)
        if "nl" in self.mods:
            mods += ("multidata",)  # hu.ser(nl=True): a newline after every comma
        c = object.__new__(hu.Case)
        for k, v in (("carrier", CARRIERS[self.carrier][1]), ("payload", self.payload), ("coding", "id"), ("ctype", "json"), ("mods", mods)):
            object.__setattr__(c, k, v)
        return c


def generate(large: bool) -> list[Case]:
    out: dict[str, Case] = {}

    def add(carrier: str, payload: str, mods: tuple[str, ...] = ()) -> None:
        try:
            c = Case(carrier, payload, mods)
        except ValueError:
            if not large:
                raise
            return
        out.setdefault(c.name, c)

    blocked_all = ["pw", "pwfmt", "url", "ambig", "urlnomode", "urluc"]
    controls = ["okform", "okurl"]
    for p in blocked_all + controls:
        add("req", p)
        add("batch", p)
        if p in hu.URL_ONLY:
            add("e42", p)
    for p in ["pw", "url", "ambig", "okform", "okurl"]:
        add("ir", p)
    # Controls through what a correct gateway must pass.
    for p in controls:
        for m in sorted(BENIGN_MODS):
            add("req", p, (m,))
        add("ir", p, ("crlf",))
        add("req", p, ("crlf", "esc"))
    add("e42", "okurl", ("crlf",))
    add("e42", "okurl", ("ws",))
    if not large:
        for p in ["pw", "url"]:
            for m in LINE_MODS + ["nan", "inf", "big", "bigint", "deep130", "deep200", "deep1000", "surr", "badutf8", "jbom", "dupmethod", "dupparams", "esc", "env", "env2"]:
                add("req", p, (m,))
            for m in ["crlf", "nan", "big", "deep130", "deep1000", "surr", "badutf8", "jbom", "dupresult", "duprt", "esc", "env"]:
                add("ir", p, (m,))
        add("req", "ambig", ("crlf",))
        add("req", "ambig", ("nan",))
        for m in ["num1", "num2", "num3", "num4", "crlf", "ws", "nan", "big", "deep130", "deep1000", "surr", "badutf8", "jbom", "dupcode", "esc", "env"]:
            add("e42", "url", (m,))
        add("e42", "ambig", ("num1",))
        add("e42", "urlnomode", ("num1",))
        # A few pairs.
        add("req", "pw", ("crlf", "nan"))
        add("req", "url", ("crlf", "badutf8"))
        add("req", "url", ("ws", "surr"))
        add("e42", "url", ("crlf", "num1"))
        add("e42", "url", ("num2", "nan"))
        add("batch", "pw", ("crlf",))
        return sorted(out.values(), key=lambda c: c.name)
    # Large: every payload x every single mod; pairs of a line mod and a JSON mod.
    for carrier in CARRIERS:
        for p in blocked_all + controls:
            for m in LINE_MODS + JSON_MODS:
                add(carrier, p, (m,))
            for a, b in itertools.product(LINE_MODS, JSON_MODS):
                if p in ("pw", "url", "ambig"):
                    add(carrier, p, (a, b))
            for a, b in itertools.combinations(["crlf", "ws", "nl", "u2028", "esc"], 2):
                add(carrier, p, (a, b))
    return sorted(out.values(), key=lambda c: c.name)


# --------------------------------------------------------------------------------------------
# Bytes
# --------------------------------------------------------------------------------------------


def line_bytes(text: str, case: Case, eol: bool = True) -> bytes:
    m = set(case.mods)
    if "ws" in m:
        text = "  \t" + text + " \t "
    if "jbom" in m:
        text = "\ufeff" + text
    end = "\r\n" if "crlf" in m else "\n"
    return (text + (end if eol else "")).encode("utf-8", "surrogateescape")


def plain_line(text: str, case: Case) -> bytes:
    """A line of the case that is not the hostile one: only the line ending applies."""
    return (text + ("\r\n" if "crlf" in case.mods else "\n")).encode("utf-8", "surrogateescape")


def final_result(case: Case, call_id: Any, answer: Any, raw: str | None) -> str:
    text = json.dumps({"case": case.name, "answer": hu.compact_answer(answer), "answer_raw": raw}, separators=(",", ":"))
    result: dict[str, Any] = {"content": [{"type": "text", "text": text}], "isError": False}
    if case.era == "modern":
        result["resultType"] = "complete"
    return json.dumps({"jsonrpc": "2.0", "id": call_id, "result": result}, separators=(",", ":"))


# --------------------------------------------------------------------------------------------
# Server
# --------------------------------------------------------------------------------------------


class Io:
    def __init__(self) -> None:
        self.buf = b""
        self.eof = False

    def write(self, data: bytes) -> None:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()

    def read_line(self, timeout: float | None) -> bytes | None:
        """One line from stdin (without its end), or None at timeout / EOF."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while b"\n" not in self.buf:
            if self.eof:
                return None
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([0], [], [], wait)
            if not ready:
                return None
            chunk = os.read(0, 1 << 16)
            if not chunk:
                self.eof = True
                return None
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return line


def log(*a: Any) -> None:
    if os.environ.get("HOSTILE_STDIO_VERBOSE"):
        print("hostile_stdio:", *a, file=sys.stderr, flush=True)


class Server:
    def __init__(self, io: Io):
        self.io = io
        self.next_id = 100
        self.answers: dict[Any, tuple[Any, str]] = {}

    def send_json(self, obj: Any) -> None:
        self.io.write(json.dumps(obj, separators=(",", ":")).encode() + b"\n")

    def handle(self, raw: bytes) -> None:
        """One client line; a case's tools/call runs to its end here."""
        text = raw.decode("utf-8", "surrogateescape")
        try:
            msg = json.loads(text)
        except ValueError:
            log("unparsable client line", raw[:200])
            return
        if not isinstance(msg, dict):
            return
        method = msg.get("method")
        if method is None:
            if "id" in msg:
                self.answers[msg["id"]] = (msg.get("result", {"error": msg.get("error")}), text.rstrip("\r"))
            return
        if "id" not in msg:
            return  # a notification
        id_ = msg["id"]
        params = msg.get("params") or {}
        meta = params.get("_meta") if isinstance(params, dict) else None
        modern = isinstance(meta, dict) and meta.get("io.modelcontextprotocol/protocolVersion") == "2026-07-28"
        if method == "initialize":
            asked = params.get("protocolVersion")
            version = asked if asked in ("2025-03-26", "2025-06-18", "2025-11-25") else "2025-11-25"
            self.send_json({"jsonrpc": "2.0", "id": id_, "result": {
                "protocolVersion": version, "capabilities": {"tools": {}},
                "serverInfo": {"name": "hostile-stdio", "version": "1.0.0"}}})
            return
        if method == "tools/list":
            result: dict[str, Any] = {"tools": []}
            if modern:
                result.update({"resultType": "complete", "ttlMs": 0, "cacheScope": "private"})
            self.send_json({"jsonrpc": "2.0", "id": id_, "result": result})
            return
        if method == "ping":
            self.send_json({"jsonrpc": "2.0", "id": id_, "result": {}})
            return
        if method == "tools/call":
            try:
                case = Case.parse(params.get("name", ""))
            except ValueError as e:
                self.send_json({"jsonrpc": "2.0", "id": id_, "error": {"code": -32602, "message": f"unknown case: {e}"}})
                return
            if "inputResponses" in params:
                self.io.write(plain_line(final_result(case, id_, {"inputResponses": params.get("inputResponses")}, text.rstrip("\r")), case))
                return
            self.serve_case(case, id_)
            return
        log("method not found", method)
        self.send_json({"jsonrpc": "2.0", "id": id_, "error": {"code": -32601, "message": "Method not found"}})

    def serve_case(self, case: Case, call_id: Any) -> None:
        eid = self.next_id
        self.next_id += 1
        for chunk, wait in case_lines(case, call_id, eid):
            self.io.write(chunk)
            if wait == "exit":
                sys.stdout.buffer.flush()
                os._exit(0)
            if wait == "answer":
                deadline = time.monotonic() + ANSWER_WAIT
                while eid not in self.answers:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    line = self.io.read_line(left)
                    if line is None:
                        if self.io.eof:
                            os._exit(0)
                        break
                    self.handle(line)
                answer, raw = self.answers.get(eid, (None, None))
                self.io.write(plain_line(final_result(case, call_id, answer, raw), case))


def case_lines(case: Case, call_id: Any, eid: int) -> list[tuple[bytes, str | None]]:
    """The bytes a case writes, in chunks; after each: None, wait for the `answer`, or `exit`."""
    h = case.hu_case()
    m = set(case.mods)
    if case.carrier == "req":
        text = hu.elicit_request(h, eid)
        if "tailnone" in m:
            return [(line_bytes(text, case, eol=False), "exit")]
        if "cr" in m:
            return [(line_bytes(text, case, eol=False) + b"\r", "answer")]
        return [(line_bytes(text, case), "answer")]
    if case.carrier == "batch":
        final = hu.ser({"jsonrpc": "2.0", "id": call_id, "result": hu.tool_result(case.name, "batched", False)})
        return [(line_bytes("[" + hu.elicit_request(h, eid) + "," + final + "]", case), None)]
    if case.carrier == "e42":
        return [(line_bytes(hu.e42_error(h, call_id), case), None)]
    return [(line_bytes(hu.input_required(h, call_id), case), None)]


def serve() -> None:
    io = Io()
    server = Server(io)
    while True:
        line = io.read_line(None)
        if line is None:
            return
        if line.strip():
            server.handle(line)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--list", action="store_true", help="print the generated cases (JSON lines) and exit")
    ap.add_argument("--large", action="store_true", help="with --list: the large run")
    ap.add_argument("--show", metavar="CASE", help="print the bytes one case writes and exit")
    args = ap.parse_args()
    if args.list:
        for c in generate(args.large):
            sys.stdout.write(json.dumps(c.meta(), separators=(",", ":")) + "\n")
        return
    if args.show:
        for chunk, _ in case_lines(Case.parse(args.show), 1, 100):
            sys.stdout.buffer.write(chunk)
        return
    try:
        serve()
    except (BrokenPipeError, KeyboardInterrupt):
        pass


if __name__ == "__main__":
    main()
