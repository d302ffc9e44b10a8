#!/usr/bin/env python3
"""Measuring MCP client for bench/harness.py (standard library only, loopback only).

Subcommands (each prints one JSON object):
  request  one HTTP/1.1 request, prints status, headers and body (sanity checks)
  sse      SSE time-to-first-event and per-event delay over N sequential tools/call streams
  idle     hold N idle GET SSE streams open and sample the RSS of the given processes
  long     read one long SSE response (stream_forever) and sample RSS as it flows

Raw sockets, so the client's own cost is small and identical for every target; every loop is
bounded in count and in time.
"""

import argparse
import asyncio
import json
import re
import socket
import sys
import time

SENT_US = re.compile(rb'"sent_us":(\d+)')
ALLOWED_HOSTS = {"127.0.0.1", "localhost", "::1"}


def now_us():
    return time.time_ns() // 1000


def check_host(host):
    if host not in ALLOWED_HOSTS:
        raise SystemExit(f"mcpclient: refusing non-loopback host {host!r}")


# ---------------------------------------------------------------- /proc sampling

def proc_status(pid):
    """VmRSS and VmHWM of one process, in KiB (0 if it is gone)."""
    out = {"VmRSS": 0, "VmHWM": 0}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key in out:
                    out[key] = int(value.split()[0])
    except (FileNotFoundError, ProcessLookupError):
        pass
    return out


def rss_kib(pids):
    return sum(proc_status(p)["VmRSS"] for p in pids)


def hwm_kib(pids):
    return sum(proc_status(p)["VmHWM"] for p in pids)


# ---------------------------------------------------------------- HTTP/1.1 over a raw socket

def build_request(method, host, port, path, headers, body=b""):
    lines = [f"{method} {path} HTTP/1.1", f"Host: {host}:{port}"]
    for k, v in headers.items():
        lines.append(f"{k}: {v}")
    if body or method == "POST":
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def parse_head(raw):
    head, _, rest = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    return status, headers, rest


class Chunked:
    """Incremental decoder of a chunked body."""

    def __init__(self):
        self.raw = bytearray()
        self.size = None  # bytes of data (plus CRLF) still expected in the current chunk
        self.done = False

    def feed(self, data):
        self.raw += data
        out = bytearray()
        while not self.done:
            if self.size is None:
                i = self.raw.find(b"\r\n")
                if i < 0:
                    break
                size = int(bytes(self.raw[:i]).split(b";")[0], 16)
                del self.raw[: i + 2]
                if size == 0:
                    self.done = True
                    break
                self.size = size + 2
            if len(self.raw) < self.size:
                break
            out += self.raw[: self.size - 2]
            del self.raw[: self.size]
            self.size = None
        return bytes(out)


def connect(host, port, timeout):
    check_host(host)
    sock = socket.create_connection((host, port), timeout=timeout)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def read_head(sock, deadline):
    raw = b""
    while b"\r\n\r\n" not in raw:
        if time.monotonic() > deadline:
            raise TimeoutError("response head")
        data = sock.recv(65536)
        if not data:
            raise ConnectionError("connection closed before the response head")
        raw += data
    return parse_head(raw)


def http_request(host, port, method, path, headers, body=b"", timeout=30.0):
    """One request on a fresh connection; returns (status, headers, body)."""
    deadline = time.monotonic() + timeout
    with connect(host, port, timeout) as sock:
        sock.sendall(build_request(method, host, port, path, {**headers, "Connection": "close"}, body))
        status, hdrs, rest = read_head(sock, deadline)
        chunked = "chunked" in hdrs.get("transfer-encoding", "").lower()
        length = int(hdrs["content-length"]) if "content-length" in hdrs else None
        decoder = Chunked() if chunked else None
        out = bytearray(decoder.feed(rest) if decoder else rest)
        while True:
            if decoder and decoder.done:
                break
            if length is not None and len(out) >= length:
                break
            if time.monotonic() > deadline:
                raise TimeoutError("response body")
            data = sock.recv(1 << 20)
            if not data:
                break
            out += decoder.feed(data) if decoder else data
        return status, hdrs, bytes(out)


def mcp_headers(session=None, version="2025-11-25"):
    h = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": version,
    }
    if session:
        h["Mcp-Session-Id"] = session
    return h


def tool_call(req_id, name, arguments=None, meta=None):
    params = {"name": name, "arguments": arguments or {}}
    if meta:
        params["_meta"] = meta
    return json.dumps(
        {"jsonrpc": "2.0", "id": req_id, "method": "tools/call", "params": params},
        separators=(",", ":"),
    ).encode()


# ---------------------------------------------------------------- SSE latency

def sse_latency(host, port, path, session, streams, events, interval_ms, timeout=30.0):
    """Sequential tools/call `sse` streams; returns raw samples in µs."""
    ttfe, delays, errors = [], [], 0
    body = tool_call(1, "sse", {"events": events, "interval_ms": interval_ms})
    request = build_request("POST", host, port, path, mcp_headers(session), body)
    budget = time.monotonic() + timeout
    for _ in range(streams):
        if time.monotonic() > budget:
            errors += 1
            break
        try:
            with connect(host, port, 10.0) as sock:
                deadline = time.monotonic() + 10.0 + events * interval_ms / 1000.0
                t0 = now_us()
                sock.sendall(request)
                status, hdrs, rest = read_head(sock, deadline)
                if status != 200 or "text/event-stream" not in hdrs.get("content-type", ""):
                    errors += 1
                    continue
                decoder = Chunked() if "chunked" in hdrs.get("transfer-encoding", "") else None
                pending = bytearray()
                seen = 0
                data = rest
                t_recv = now_us()
                while True:
                    pending += decoder.feed(data) if decoder else data
                    while True:
                        i = pending.find(b"\n\n")
                        if i < 0:
                            break
                        event = bytes(pending[:i])
                        del pending[: i + 2]
                        m = SENT_US.search(event)
                        if not m:
                            continue
                        if seen == 0:
                            ttfe.append(t_recv - t0)
                        delays.append(t_recv - int(m.group(1)))
                        seen += 1
                    if seen >= events or (decoder and decoder.done):
                        break
                    if time.monotonic() > deadline:
                        raise TimeoutError("sse stream")
                    data = sock.recv(65536)
                    t_recv = now_us()
                    if not data:
                        break
                if seen != events:
                    errors += 1
        except (OSError, ValueError, TimeoutError):
            errors += 1
    return {"ttfe_us": ttfe, "delay_us": delays, "errors": errors}


# ---------------------------------------------------------------- idle streams

async def _open_idle(host, port, path, request, ready_timeout):
    reader, writer = await asyncio.open_connection(host, port)
    writer.write(request)
    await writer.drain()
    raw = b""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + ready_timeout
    while b"\r\n\r\n" not in raw:
        remaining = deadline - loop.time()
        if remaining <= 0:
            raise TimeoutError("idle stream head")
        chunk = await asyncio.wait_for(reader.read(4096), remaining)
        if not chunk:
            raise ConnectionError("closed")
        raw += chunk
    status = int(raw.split(b" ", 2)[1])
    if status != 200:
        raise ConnectionError(f"status {status}")
    return reader, writer


async def _hold_idle(host, port, path, count, pids, settle, concurrency, timeout):
    check_host(host)
    request = build_request("GET", host, port, path, {"Accept": "text/event-stream"})
    before = rss_kib(pids)
    sem = asyncio.Semaphore(concurrency)
    conns, errors = [], 0

    async def one():
        async with sem:
            return await _open_idle(host, port, path, request, timeout)

    started = time.monotonic()
    results = await asyncio.gather(*(one() for _ in range(count)), return_exceptions=True)
    for r in results:
        if isinstance(r, BaseException):
            errors += 1
        else:
            conns.append(r)
    open_s = time.monotonic() - started
    await asyncio.sleep(settle)
    held = rss_kib(pids)
    for _, writer in conns:
        writer.close()
    for _, writer in conns:
        try:
            await asyncio.wait_for(writer.wait_closed(), 5)
        except (OSError, asyncio.TimeoutError):
            pass
    await asyncio.sleep(settle)
    after = rss_kib(pids)
    return {
        "count": count,
        "opened": len(conns),
        "errors": errors,
        "open_s": round(open_s, 3),
        "rss_before_kib": before,
        "rss_held_kib": held,
        "rss_after_close_kib": after,
    }


def hold_idle(host, port, path, count, pids, settle=1.0, concurrency=256, timeout=60.0):
    return asyncio.run(_hold_idle(host, port, path, count, pids, settle, concurrency, timeout))


# ---------------------------------------------------------------- one long stream

def long_stream(host, port, path, session, total_bytes, pids, samples=8, event_bytes=16384, timeout=600.0):
    """Reads `total_bytes` of one stream_forever response, sampling RSS every total/samples."""
    before = rss_kib(pids)
    body = tool_call(1, "stream_forever", {"event_bytes": event_bytes, "max_bytes": total_bytes + (1 << 20)})
    step = max(1, total_bytes // samples)
    series = []
    buf = bytearray(1 << 20)
    view = memoryview(buf)
    received = 0
    started = time.monotonic()
    with connect(host, port, 10.0) as sock:
        sock.sendall(build_request("POST", host, port, path, mcp_headers(session), body))
        status, hdrs, rest = read_head(sock, started + 30.0)
        if status != 200:
            raise SystemExit(f"long stream: status {status}")
        received = len(rest)
        next_sample = step
        series.append({"bytes": received, "rss_kib": rss_kib(pids)})
        while received < total_bytes:
            if time.monotonic() - started > timeout:
                break
            n = sock.recv_into(view)
            if n == 0:
                break
            received += n
            if received >= next_sample:
                series.append({"bytes": received, "rss_kib": rss_kib(pids)})
                next_sample += step
    elapsed = time.monotonic() - started
    return {
        "bytes": received,
        "complete": received >= total_bytes,
        "seconds": round(elapsed, 3),
        "mib_per_s": round(received / elapsed / (1 << 20), 1),
        "rss_before_kib": before,
        "series": series,
    }


# ---------------------------------------------------------------- CLI

def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--path", default="/mcp")
    p.add_argument("--session", default=None)
    p.add_argument("--pids", default="", help="comma-separated PIDs whose RSS is sampled")
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("request")
    r.add_argument("--method", default="POST")
    r.add_argument("--tool", default="small")
    s = sub.add_parser("sse")
    s.add_argument("--streams", type=int, default=20)
    s.add_argument("--events", type=int, default=10)
    s.add_argument("--interval-ms", type=int, default=0)
    i = sub.add_parser("idle")
    i.add_argument("--count", type=int, default=100)
    i.add_argument("--settle", type=float, default=1.0)
    lg = sub.add_parser("long")
    lg.add_argument("--bytes", type=int, default=1 << 30)
    args = p.parse_args()
    pids = [int(x) for x in args.pids.split(",") if x]
    if args.cmd == "request":
        body = tool_call(1, args.tool) if args.method == "POST" else b""
        status, hdrs, data = http_request(args.host, args.port, args.method, args.path, mcp_headers(args.session), body)
        out = {"status": status, "headers": hdrs, "body": data[:2000].decode("utf-8", "replace"), "length": len(data)}
    elif args.cmd == "sse":
        out = sse_latency(args.host, args.port, args.path, args.session, args.streams, args.events, args.interval_ms)
    elif args.cmd == "idle":
        out = hold_idle(args.host, args.port, args.path, args.count, pids, args.settle)
    else:
        out = long_stream(args.host, args.port, args.path, args.session, args.bytes, pids)
    json.dump(out, sys.stdout)
    print()


if __name__ == "__main__":
    main()
