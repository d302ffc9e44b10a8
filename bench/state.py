#!/usr/bin/env python3
"""The state-store benchmark: `state.backend: redis` against `memory`, on loopback.

Starts bench_upstream, one redis-server and two gateways that differ only in their state
backend, then:

1. small JSON `tools/call` throughput with wrk (legacy session), the two gateways interleaved
   for --rounds rounds: ordinary traffic must not touch the store, so the medians should agree;
2. the legacy elicitation round trip (judge -> record -> answer -> validate): POST tools/call,
   read the SSE stream with the elicitation, POST the answer, get 202; --samples times per
   backend, interleaved; p50/p99 of each and of the difference.

Prints a Markdown report. Every process is started here and stopped by PID at the end.
"""

import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
import mcpclient  # noqa: E402

HOST = "127.0.0.1"


def free_port():
    import socket

    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def wait_port(port, timeout=20.0):
    import socket

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection((HOST, port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"nothing listens on {port}")


def pct(values, p):
    v = sorted(values)
    return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gateway-bin", required=True)
    ap.add_argument("--upstream-bin", required=True)
    ap.add_argument("--wrk-bin", default="wrk")
    ap.add_argument("--redis-bin", default="redis-server")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--connections", type=int, default=32)
    ap.add_argument("--samples", type=int, default=2000)
    args = ap.parse_args()

    procs = []
    tmp = tempfile.mkdtemp(prefix="elicitgate-state-bench-")

    def start(argv, log):
        p = subprocess.Popen(argv, stdout=open(os.path.join(tmp, log), "w"), stderr=subprocess.STDOUT)
        procs.append(p)
        return p

    try:
        up = free_port()
        start([args.upstream_bin, "--listen", f"{HOST}:{up}", "--threads", "2"], "upstream.log")
        wait_port(up)
        rport = free_port()
        start([args.redis_bin, "--port", str(rport), "--bind", HOST, "--save", "", "--appendonly", "no"], "redis.log")
        wait_port(rport)
        gateways = {}
        for backend in ("memory", "redis"):
            port, admin = free_port(), free_port()
            state = "" if backend == "memory" else f"state:\n  backend: redis\n  redis: {{ url: \"redis://{HOST}:{rport}\" }}\n"
            cfg = os.path.join(tmp, f"{backend}.yaml")
            with open(cfg, "w") as f:
                f.write(
                    f"listen: {HOST}:{port}\nadmin_listen: {HOST}:{admin}\nworkers: 1\naudit: {{ sink: off }}\n"
                    f"log: {{ level: warn }}\n{state}"
                    "policies:\n  default:\n    rate: { max_per_minute: 1000000 }\n"
                    f"routes:\n  - name: bench\n    path: /mcp\n    upstream: \"http://{HOST}:{up}/mcp\"\n"
                )
            start([args.gateway_bin, "serve", "--config", cfg], f"gateway-{backend}.log")
            wait_port(port)
            gateways[backend] = port
        sessions = {}
        init = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {"form": {}}},
            "clientInfo": {"name": "bench", "version": "1"}}}).encode()
        for backend, port in gateways.items():
            status, hdrs, _ = mcpclient.http_request(HOST, port, "POST", "/mcp", mcpclient.mcp_headers(), init)
            assert status == 200, status
            sessions[backend] = hdrs["mcp-session-id"]

        # 1. Throughput, interleaved.
        lua = os.path.join(os.path.dirname(__file__), "wrk_mcp.lua")
        rps = {"memory": [], "redis": []}
        for rnd in range(args.rounds):
            order = ("memory", "redis") if rnd % 2 == 0 else ("redis", "memory")
            for backend in order:
                env = {**os.environ, "BENCH_SCENARIO": "small", "BENCH_SESSION": sessions[backend]}
                out = subprocess.run(
                    [args.wrk_bin, "-t2", f"-c{args.connections}", f"-d{args.duration}s", "-s", lua,
                     f"http://{HOST}:{gateways[backend]}/mcp"],
                    env=env, capture_output=True, text=True, check=True).stdout
                m = re.search(r"Requests/sec:\s+([\d.]+)", out)
                rps[backend].append(float(m.group(1)))

        # 2. Elicitation round trips, interleaved one by one.
        rtt = {"memory": [], "redis": []}
        answer_body = {"action": "accept", "content": {"display_name": "Ada"}}
        for i in range(args.samples):
            for backend in (("memory", "redis") if i % 2 == 0 else ("redis", "memory")):
                port, session = gateways[backend], sessions[backend]
                t0 = time.perf_counter_ns()
                status, _, body = mcpclient.http_request(
                    HOST, port, "POST", "/mcp", mcpclient.mcp_headers(session),
                    mcpclient.tool_call(i + 1, "elicit_pending"))
                m = re.search(rb'"id":"(el-\d+)"', body)
                assert status == 200 and m, (status, body[:200])
                answer = json.dumps({"jsonrpc": "2.0", "id": m.group(1).decode(), "result": answer_body}).encode()
                status, _, body = mcpclient.http_request(HOST, port, "POST", "/mcp", mcpclient.mcp_headers(session), answer)
                assert status == 202, (status, body[:200])
                rtt[backend].append((time.perf_counter_ns() - t0) / 1000.0)

        mem, red = statistics.median(rps["memory"]), statistics.median(rps["redis"])
        print("## State store: redis vs memory\n")
        print(f"Small JSON tools/call, wrk -t2 -c{args.connections}, {args.duration} s x {args.rounds} rounds, interleaved:\n")
        print("| backend | median req/s | rounds |")
        print("|---|---|---|")
        for b in ("memory", "redis"):
            print(f"| {b} | {statistics.median(rps[b]):.0f} | {', '.join(f'{v:.0f}' for v in rps[b])} |")
        print(f"\nredis / memory = {red / mem:.3f} ({(red / mem - 1) * 100:+.1f} %)\n")
        print(f"Legacy elicitation round trip (tools/call -> elicitation -> answer -> 202), {args.samples} each, interleaved, fresh connections, µs:\n")
        print("| backend | p50 | p90 | p99 |")
        print("|---|---|---|---|")
        for b in ("memory", "redis"):
            print(f"| {b} | {pct(rtt[b], 50):.0f} | {pct(rtt[b], 90):.0f} | {pct(rtt[b], 99):.0f} |")
        print(f"\nadded by redis: p50 {pct(rtt['redis'], 50) - pct(rtt['memory'], 50):+.0f} µs, "
              f"p99 {pct(rtt['redis'], 99) - pct(rtt['memory'], 99):+.0f} µs")
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()


if __name__ == "__main__":
    main()
