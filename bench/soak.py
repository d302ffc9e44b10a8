#!/usr/bin/env python3
"""Soak: idle SSE streams held open, small-JSON load and a trickle of elicitations for a fixed
time against one gateway in front of bench_upstream, sampling the gateway's RSS, open file
descriptors and error counts. Bounded in count and time; stops everything it started.

    bench/soak.sh                                  # 10,000 streams, 10 minutes
    bench/soak.sh --streams 2000 --minutes 2       # shorter

Output: one line per sample and a JSON summary (plateau check: RSS over the last third of the
run against the first third after the streams were opened).
"""
import argparse
import asyncio
import json
import os
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import harness  # noqa: E402  (free_port, wait_port, Started, GATEWAY_CONF)
import mcpclient as mc  # noqa: E402

HOST = "127.0.0.1"


def fds(pid):
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return -1


def metric(port, name):
    try:
        _, _, body = mc.http_request(HOST, port, "GET", "/metrics", {}, timeout=5)
    except OSError:
        return None
    total = 0.0
    for line in body.decode().splitlines():
        if line.startswith(name) and not line.startswith("#"):
            total += float(line.rsplit(" ", 1)[1])
    return total


def trickle(port, stop, counts):
    """One legacy elicitation per second in its own session, answered by the client."""
    n = 0
    while not stop.is_set():
        n += 1
        try:
            init = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
                "clientInfo": {"name": "soak", "version": "1"}}}).encode()
            status, hdrs, _ = mc.http_request(HOST, port, "POST", "/mcp", mc.mcp_headers(), init, timeout=10)
            session = hdrs.get("mcp-session-id")
            status, _, body = mc.http_request(HOST, port, "POST", "/mcp", mc.mcp_headers(session),
                                              mc.tool_call(n, "elicit_legacy"), timeout=10)
            if status == 200 and b"elicitation/create" in body:
                counts["elicitations"] += 1
            else:
                counts["elicitation_errors"] += 1
        except OSError:
            counts["elicitation_errors"] += 1
        stop.wait(1.0)


async def hold(port, count, stop_after):
    request = mc.build_request("GET", HOST, port, "/mcp", {"Accept": "text/event-stream"})
    sem = asyncio.Semaphore(200)

    async def one():
        async with sem:
            return await mc._open_idle(HOST, port, "/mcp", request, 60)

    results = await asyncio.gather(*(one() for _ in range(count)), return_exceptions=True)
    conns = [r for r in results if not isinstance(r, BaseException)]
    errors = len(results) - len(conns)
    opened_at = time.monotonic()

    async def drain(reader):
        try:
            while await reader.read(4096):
                pass
        except OSError:
            pass

    readers = [asyncio.create_task(drain(r)) for r, _ in conns]
    return conns, readers, errors, opened_at


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--gateway-bin", required=True)
    p.add_argument("--upstream-bin", required=True)
    p.add_argument("--wrk-bin", default="/usr/bin/wrk")
    p.add_argument("--streams", type=int, default=10_000)
    p.add_argument("--minutes", type=float, default=10)
    p.add_argument("--load-connections", type=int, default=4)
    p.add_argument("--load-delay-ms", type=int, default=20, help="paced small-JSON load per connection")
    p.add_argument("--sample-secs", type=float, default=10)
    a = p.parse_args()

    started = harness.Started()
    workdir = os.path.join("/tmp", f"elicitgate-soak-{os.getpid()}")
    os.makedirs(os.path.join(workdir, "elicitgate"), exist_ok=True)
    up, gw, adm = harness.free_port(), harness.free_port(), harness.free_port()
    duration = int(a.minutes * 60)
    try:
        u = started.start("upstream", [a.upstream_bin, "--listen", f"{HOST}:{up}", "--threads", "1",
                                       "--max-stream-secs", str(duration + 120)],
                          os.path.join(workdir, "upstream.log"))
        harness.wait_port(up, u, "bench_upstream")
        conf = os.path.join(workdir, "elicitgate", "elicitgate.yaml")
        with open(conf, "w") as f:
            f.write(harness.GATEWAY_CONF.format(host=HOST, port=gw, admin_port=adm, upstream_port=up))
        g = started.start("elicitgate", [a.gateway_bin, "serve", "--config", conf],
                          os.path.join(workdir, "elicitgate.log"))
        harness.wait_port(gw, g, "elicitgate")
        loop = asyncio.new_event_loop()
        conns, readers, open_errors, opened_at = loop.run_until_complete(hold(gw, a.streams, duration))
        print(f"soak: {len(conns)} idle streams open ({open_errors} failed), RSS {mc.rss_kib([g.pid])} KiB, fds {fds(g.pid)}", flush=True)

        stop = threading.Event()
        counts = {"elicitations": 0, "elicitation_errors": 0}
        t = threading.Thread(target=trickle, args=(gw, stop, counts), daemon=True)
        t.start()
        # The session wrk uses (its script needs one).
        init = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "w", "version": "1"}}}).encode()
        _, hdrs, _ = mc.http_request(HOST, gw, "POST", "/mcp", mc.mcp_headers(), init)
        env = dict(os.environ, BENCH_SCENARIO="small", BENCH_SESSION=hdrs.get("mcp-session-id", ""),
                   BENCH_DELAY_MS=str(a.load_delay_ms))
        wrk = subprocess.Popen([a.wrk_bin, "-t", "1", "-c", str(a.load_connections), "-d", f"{duration}s",
                                "--timeout", "5s", "-s", os.path.join(HERE, "wrk_mcp.lua"), f"http://{HOST}:{gw}/mcp"],
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        samples = []
        end = time.monotonic() + duration
        while time.monotonic() < end:
            loop.run_until_complete(asyncio.sleep(a.sample_secs))
            s = {"t_s": round(time.monotonic() - opened_at, 1), "rss_kib": mc.rss_kib([g.pid]), "fds": fds(g.pid),
                 "sse_open": metric(adm, "elicitgate_sse_streams_open"),
                 "upstream_errors": metric(adm, "elicitgate_upstream_errors_total"),
                 "elicitations": counts["elicitations"], "elicitation_errors": counts["elicitation_errors"]}
            samples.append(s)
            print("soak: " + json.dumps(s), flush=True)
        stop.set()
        out, _ = wrk.communicate(timeout=120)
        line = next((l for l in out.splitlines() if l.startswith("BENCHJSON ")), None)
        load = json.loads(line[len("BENCHJSON "):]) if line else {"raw": out[-500:]}
        third = max(1, len(samples) // 3)
        first = max(s["rss_kib"] for s in samples[:third])
        last = max(s["rss_kib"] for s in samples[-third:])
        summary = {"streams": len(conns), "open_errors": open_errors, "minutes": a.minutes,
                   "load": {k: load.get(k) for k in ("requests", "duration_s", "non2xx", "timeouts",
                                                     "connect_errors", "read_errors", "write_errors")},
                   "elicitations": counts["elicitations"], "elicitation_errors": counts["elicitation_errors"],
                   "rss_first_third_max_kib": first, "rss_last_third_max_kib": last,
                   "plateau": last <= first * 1.05 + 1024, "samples": samples}
        print("SOAKJSON " + json.dumps(summary), flush=True)
        for _, w in conns:
            w.close()
        for r in readers:
            r.cancel()
    finally:
        started.stop_all()


if __name__ == "__main__":
    main()
