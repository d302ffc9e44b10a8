#!/usr/bin/env python3
"""The benchmark driver behind bench/run.sh (standard library only). Loopback only.

Starts the mock upstream (examples/bench_upstream.rs), nginx (proxy_pass, buffering off,
HTTP/1.1 keep-alive upstream pool) and elicitgate, each on its own 127.0.0.1 port, then
measures direct / nginx / elicitgate **interleaved**: every round runs each target once, the
order rotating between rounds, so slow drift of the machine hits all three alike.

Measured: small JSON tools/call at fixed concurrency and at a fixed (paced) rate, 1 MiB
results, SSE time-to-first-event and per-event delay, an elicitation-heavy mix, the CPU each
proxy spends per request, peak RSS; then RSS with idle open SSE streams and RSS along one long
SSE response. Prints a Markdown report and writes it (and the raw numbers as JSON) to --out.
"""

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True  # keep bench/ free of __pycache__
import mcpclient as mc  # noqa: E402

HOST = "127.0.0.1"
TARGETS = ("direct", "nginx", "elicitgate")
TICK = os.sysconf("SC_CLK_TCK")


# ---------------------------------------------------------------- processes

class Started:
    """Processes this run started; only these are ever signalled."""

    def __init__(self):
        self.procs = []

    def start(self, name, argv, log_path, env=None):
        log = open(log_path, "wb")
        p = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)
        self.procs.append((name, p, log))
        return p

    def stop_all(self):
        for _, p, _ in reversed(self.procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 10
        for _, p, log in reversed(self.procs):
            try:
                p.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=5)
            log.close()
        self.procs = []


def free_port():
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def wait_port(port, proc, what, timeout=20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"{what} exited with {proc.returncode} before listening")
        try:
            with socket.create_connection((HOST, port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"{what} did not listen on {port} within {timeout}s")


def children(pid):
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                if int(fields[1]) == pid:
                    out.append(int(entry))
            except (OSError, IndexError, ValueError):
                pass
    return out


def cpu_ticks(pids):
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime
        except (OSError, IndexError, ValueError):
            pass
    return total


def busy_fraction(seconds):
    """Share of all CPUs busy over `seconds` (before anything of ours runs)."""

    def snap():
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        idle = v[3] + v[4]
        return sum(v), idle

    t1, i1 = snap()
    time.sleep(seconds)
    t2, i2 = snap()
    return 1 - (i2 - i1) / max(1, t2 - t1)


def stat_ticks():
    """(all ticks, busy ticks) summed over CPUs, from /proc/stat."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    total = sum(v[:8])
    return total, total - v[3] - v[4]


def children_ticks():
    import resource
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (ru.ru_utime + ru.ru_stime) * TICK


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


# ---------------------------------------------------------------- configuration files

NGINX_CONF = """\
worker_processes {workers};
worker_rlimit_nofile {nofile};
pid {dir}/nginx.pid;
error_log {dir}/nginx-error.log warn;
events {{
    worker_connections {worker_connections};
}}
http {{
    access_log off;
    client_body_temp_path {dir}/tmp/body;
    proxy_temp_path {dir}/tmp/proxy;
    fastcgi_temp_path {dir}/tmp/fastcgi;
    uwsgi_temp_path {dir}/tmp/uwsgi;
    scgi_temp_path {dir}/tmp/scgi;
    client_max_body_size 8m;
    client_body_buffer_size 1m;
    keepalive_requests 1000000;
    keepalive_timeout 300s;
    upstream mcp {{
        server {host}:{upstream_port};
        keepalive 256;
        keepalive_requests 1000000;
        keepalive_timeout 90s;
    }}
    server {{
        listen {host}:{port} reuseport backlog=4096;
        location / {{
            proxy_pass http://mcp;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            proxy_set_header X-Forwarded-Proto $scheme;
            proxy_buffering off;
            proxy_read_timeout 3600s;
            proxy_send_timeout 3600s;
        }}
    }}
}}
"""

GATEWAY_CONF = """\
# Written by bench/harness.py.
listen: "{host}:{port}"
admin_listen: "{host}:{admin_port}"
limits:
  max_connections: 20000
timeouts:
  stream_idle: 10m
log:
  level: warn
audit:
  sink: "off"
routes:
  - name: bench
    path: /mcp
    upstream: "http://{host}:{upstream_port}/mcp"
policies:
  # The built-in default (every rule deny) except the per-session rate limit, which a
  # load test would otherwise hit after ten elicitations.
  default:
    rate:
      max_per_minute: 1000000000
"""


# ---------------------------------------------------------------- statistics

def pct(values, p):
    if not values:
        return None
    v = sorted(values)
    k = max(0, min(len(v) - 1, int(round(p / 100 * len(v) + 0.5)) - 1))
    return v[k]


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


# ---------------------------------------------------------------- the run

class Bench:
    def __init__(self, args):
        self.args = args
        self.started = Started()
        self.dir = tempfile.mkdtemp(prefix="elicitgate-bench-")
        self.results = {"rounds": args.rounds, "smoke": args.smoke}
        self.failures = []
        self.ports = {}
        self.pids = {}
        self.sessions = {}

    # -- setup

    def start(self):
        a = self.args
        up, ngx, gw, gwa = free_port(), free_port(), free_port(), free_port()
        self.ports = {"direct": up, "nginx": ngx, "elicitgate": gw}
        self.admin_port = gwa
        env = {k: v for k, v in os.environ.items() if k != "RUST_LOG"}

        p = self.started.start(
            "upstream",
            [a.upstream_bin, "--listen", f"{HOST}:{up}", "--threads", str(a.upstream_threads),
             "--max-stream-secs", "900"],
            os.path.join(self.dir, "upstream.log"), env)
        wait_port(up, p, "bench_upstream")
        self.pids["direct"] = [p.pid]

        # A directory of its own: the gateway watches its configuration's directory for reloads.
        os.makedirs(os.path.join(self.dir, "elicitgate"), exist_ok=True)
        conf = os.path.join(self.dir, "elicitgate", "elicitgate.yaml")
        with open(conf, "w") as f:
            f.write(GATEWAY_CONF.format(host=HOST, port=gw, admin_port=gwa, upstream_port=up))
        check = subprocess.run([a.gateway_bin, "check-config", "--config", conf],
                               capture_output=True, text=True, timeout=30, env=env)
        if check.returncode != 0:
            raise SystemExit(f"elicitgate check-config failed:\n{check.stdout}{check.stderr}")
        p = self.started.start("elicitgate", [a.gateway_bin, "serve", "--config", conf],
                               os.path.join(self.dir, "elicitgate.log"), env)
        wait_port(gw, p, "elicitgate")
        self.pids["elicitgate"] = [p.pid]

        for sub in ("body", "proxy", "fastcgi", "uwsgi", "scgi"):
            os.makedirs(os.path.join(self.dir, "tmp", sub), exist_ok=True)
        os.chmod(self.dir, 0o755)
        nofile = self.nofile
        nconf = os.path.join(self.dir, "nginx.conf")
        with open(nconf, "w") as f:
            f.write(NGINX_CONF.format(
                workers=a.nginx_workers, nofile=nofile, worker_connections=max(1024, nofile - 100),
                dir=self.dir, host=HOST, port=ngx, upstream_port=up))
        base = [a.nginx_bin, "-p", self.dir, "-c", nconf, "-e", os.path.join(self.dir, "nginx-error.log")]
        test = subprocess.run(base + ["-t", "-q"], capture_output=True, text=True, timeout=30)
        if test.returncode != 0:
            raise SystemExit(f"nginx -t failed:\n{test.stdout}{test.stderr}")
        p = self.started.start("nginx", base + ["-g", "daemon off;"], os.path.join(self.dir, "nginx.log"))
        wait_port(ngx, p, "nginx")
        deadline = time.monotonic() + 10
        while len(children(p.pid)) < a.nginx_workers and time.monotonic() < deadline:
            time.sleep(0.05)
        self.pids["nginx"] = [p.pid] + children(p.pid)
        self.nginx_master = p.pid
        self.log(f"upstream :{up}  nginx :{ngx} (pids {self.pids['nginx']})  elicitgate :{gw} (pid {self.pids['elicitgate'][0]})  work dir {self.dir}")

    @property
    def nofile(self):
        import resource
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        return soft if soft != resource.RLIM_INFINITY else 1 << 20

    def log(self, msg):
        print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", flush=True)

    def fail(self, msg):
        self.log(f"FAIL: {msg}")
        self.failures.append(msg)

    # -- sanity: every target answers every tool as expected

    def sanity(self):
        for t in TARGETS:
            port = self.ports[t]
            init = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {"elicitation": {"form": {}}},
                "clientInfo": {"name": "bench", "version": "0"}}}).encode()
            status, hdrs, body = mc.http_request(HOST, port, "POST", "/mcp", mc.mcp_headers(), init)
            session = hdrs.get("mcp-session-id")
            if status != 200 or not session:
                raise SystemExit(f"{t}: initialize failed: {status} {body[:200]!r}")
            self.sessions[t] = session
            h = mc.mcp_headers(session)
            checks = {
                "small": lambda s, b: s == 200 and 900 < len(b) < 1200 and b'"isError":false' in b,
                "large": lambda s, b: s == 200 and len(b) > 1_000_000,
                "elicit_legacy": lambda s, b: s == 200 and b"elicitation/create" in b and b"report queued" in b,
            }
            for tool, ok in checks.items():
                s, _, b = mc.http_request(HOST, port, "POST", "/mcp", h, mc.tool_call(7, tool))
                if not ok(s, b):
                    self.fail(f"{t}: tools/call {tool} answered {s} {b[:300]!r}")
            meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}}}
            s, _, b = mc.http_request(HOST, port, "POST", "/mcp", mc.mcp_headers(None, "2026-07-28"),
                                      mc.tool_call(8, "elicit_2026", {}, meta))
            if not (s == 200 and b'"input_required"' in b and b"elicitation/create" in b):
                self.fail(f"{t}: tools/call elicit_2026 answered {s} {b[:300]!r}")
            r = mc.sse_latency(HOST, port, "/mcp", session, 1, 3, 0)
            if r["errors"] or len(r["delay_us"]) != 3:
                self.fail(f"{t}: SSE stream check failed: {r}")
        self.log(f"sanity checks done; sessions {self.sessions}")

    # -- wrk

    def wrk(self, target, scenario, conns, duration, delay_ms=0):
        a = self.args
        env = dict(os.environ, BENCH_SCENARIO=scenario, BENCH_SESSION=self.sessions[target],
                   BENCH_DELAY_MS=str(delay_ms))
        url = f"http://{HOST}:{self.ports[target]}/mcp"
        argv = [a.wrk_bin, "-t", str(min(a.wrk_threads, conns)), "-c", str(conns), "-d", f"{duration}s",
                "--timeout", "5s", "-s", os.path.join(HERE, "wrk_mcp.lua"), url]
        proxy_pids = self.pids[target] if target != "direct" else []
        ours = self.pids["direct"] + self.pids["nginx"] + self.pids["elicitgate"]
        up0, px0, all0, st0, ch0 = (cpu_ticks(self.pids["direct"]), cpu_ticks(proxy_pids), cpu_ticks(ours),
                                    stat_ticks(), children_ticks())
        out = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=duration + 60)
        up1, px1, all1, st1, ch1 = (cpu_ticks(self.pids["direct"]), cpu_ticks(proxy_pids), cpu_ticks(ours),
                                    stat_ticks(), children_ticks())
        line = next((l for l in out.stdout.splitlines() if l.startswith("BENCHJSON ")), None)
        if out.returncode != 0 or line is None:
            raise SystemExit(f"wrk failed ({out.returncode}):\n{out.stdout}\n{out.stderr}")
        r = json.loads(line[len("BENCHJSON "):])
        n = max(1, r["requests"])
        r["rps"] = r["requests"] / r["duration_s"]
        r["errors"] = r["connect_errors"] + r["read_errors"] + r["write_errors"] + r["timeouts"] + r["non2xx"]
        r["proxy_cpu_us_per_req"] = (px1 - px0) / TICK * 1e6 / n if proxy_pids else None
        r["upstream_cpu_us_per_req"] = (up1 - up0) / TICK * 1e6 / n
        # CPU used by anything but this benchmark (other work on the machine), as a share of
        # all CPUs over the run: a disturbed round shows up here.
        busy = st1[1] - st0[1]
        mine = (all1 - all0) + (ch1 - ch0)
        r["foreign_cpu"] = max(0.0, (busy - mine) / max(1, st1[0] - st0[0]))
        if r["errors"]:
            msg = f"{target} {scenario}: {r['errors']} errors ({r})"
            if self.args.smoke:
                self.fail(msg)
            else:
                self.log("WARNING " + msg)
        return r

    def wait_quiet(self):
        """Waits (bounded) until nothing else uses much CPU, so a round is not measured while
        other work runs on the machine."""
        a = self.args
        if a.quiet_wait <= 0:
            return
        deadline = time.monotonic() + a.quiet_wait
        waited = False
        while True:
            busy = busy_fraction(1.0)
            if busy <= a.quiet_threshold or time.monotonic() > deadline:
                break
            if not waited:
                self.log(f"machine busy ({busy:.0%} CPU outside the benchmark): waiting up to {a.quiet_wait:.0f}s")
            waited = True
        if waited:
            self.log(f"continuing (other load now {busy:.0%})")

    def measured_wrk(self, target, scenario, conns, duration, delay_ms):
        """One wrk run; repeated (at most twice) when other work disturbed it."""
        for attempt in range(3):
            self.wait_quiet()
            r = self.wrk(target, scenario, conns, duration, delay_ms)
            if r["foreign_cpu"] <= self.args.disturbed_threshold or self.args.quiet_wait <= 0:
                break
            self.log(f"{target} {scenario}: {r['foreign_cpu']:.0%} CPU used by other work during the run; "
                     f"{'repeating' if attempt < 2 else 'keeping it'}")
        r["attempts"] = attempt + 1
        return r

    def order(self, rnd):
        k = rnd % len(TARGETS)
        return TARGETS[k:] + TARGETS[:k]

    def interleaved_wrk(self, key, scenario, conns, duration, delay_ms=0):
        per = {t: [] for t in TARGETS}
        for rnd in range(self.args.rounds):
            for t in self.order(rnd):
                r = self.measured_wrk(t, scenario, conns, duration, delay_ms)
                per[t].append(r)
                self.log(f"{key} round {rnd + 1} {t:10s} {r['rps']:9.0f} req/s  p50 {r['p50_us']} µs  "
                         f"p99 {r['p99_us']} µs  p99.9 {r['p999_us']} µs  errors {r['errors']}  "
                         f"proxy CPU {r['proxy_cpu_us_per_req'] or 0:.1f} µs/req  "
                         f"other load {r['foreign_cpu']:.0%}")
        agg = {}
        for t, rs in per.items():
            agg[t] = {m: median([r[m] for r in rs]) for m in
                      ("rps", "p50_us", "p90_us", "p99_us", "p999_us", "max_us", "errors",
                       "proxy_cpu_us_per_req", "upstream_cpu_us_per_req", "bytes", "duration_s")}
            agg[t]["errors"] = sum(r["errors"] for r in rs)
            agg[t]["foreign_cpu_max"] = max(r["foreign_cpu"] for r in rs)
            agg[t]["rounds"] = rs
        self.results[key] = {"scenario": scenario, "connections": conns, "duration_s": duration,
                             "delay_ms": delay_ms, "targets": agg}

    def warmup(self):
        for t in TARGETS:
            self.wrk(t, "small", 32, 1)

    # -- SSE

    def sse(self):
        a = self.args
        samples = {t: {"ttfe_us": [], "delay_us": [], "errors": 0} for t in TARGETS}
        for rnd in range(a.rounds):
            for t in self.order(rnd):
                self.wait_quiet()
                r = mc.sse_latency(HOST, self.ports[t], "/mcp", self.sessions[t], a.sse_streams,
                                   a.sse_events, a.sse_interval_ms, timeout=120)
                for k in ("ttfe_us", "delay_us"):
                    samples[t][k] += r[k]
                samples[t]["errors"] += r["errors"]
        out = {}
        for t, s in samples.items():
            out[t] = {"ttfe_p50_us": pct(s["ttfe_us"], 50), "ttfe_p99_us": pct(s["ttfe_us"], 99),
                      "delay_p50_us": pct(s["delay_us"], 50), "delay_p99_us": pct(s["delay_us"], 99),
                      "delay_max_us": max(s["delay_us"]) if s["delay_us"] else None,
                      "streams": len(s["ttfe_us"]), "events": len(s["delay_us"]), "errors": s["errors"]}
            if s["errors"]:
                self.fail(f"SSE {t}: {s['errors']} stream errors")
            self.log(f"sse {t:10s} first event p50 {out[t]['ttfe_p50_us']} µs p99 {out[t]['ttfe_p99_us']} µs; "
                     f"per-event delay p50 {out[t]['delay_p50_us']} µs p99 {out[t]['delay_p99_us']} µs")
        self.results["sse"] = {"streams_per_round": a.sse_streams, "events": a.sse_events,
                               "interval_ms": a.sse_interval_ms, "targets": out}

    # -- memory

    def metrics(self):
        """The gateway's own gauges (enforcement state, open streams)."""
        try:
            _, _, body = mc.http_request(HOST, self.admin_port, "GET", "/metrics", {})
        except OSError:
            return {}
        out = {}
        for line in body.decode().splitlines():
            for name in ("elicitgate_pending_elicitations", "elicitgate_sessions", "elicitgate_sse_streams_open"):
                if line.startswith(name):
                    out[name] = out.get(name, 0) + float(line.rsplit(" ", 1)[1])
        return out

    def peak_rss(self, key="peak_rss_kib"):
        self.pids["nginx"] = [self.nginx_master] + children(self.nginx_master)
        self.results[key] = {
            "elicitgate": mc.hwm_kib(self.pids["elicitgate"]),
            "nginx": mc.hwm_kib(self.pids["nginx"]),
            "nginx_workers": mc.hwm_kib(self.pids["nginx"][1:]),
            "upstream": mc.hwm_kib(self.pids["direct"]),
        }
        self.results[key]["gateway_metrics"] = self.metrics()
        self.log(f"{key}: {self.results[key]}")

    def idle(self):
        a = self.args
        # Each stream holds a client socket and an upstream socket in the proxy.
        cap = (self.nofile - 100) // 2
        counts = sorted({min(c, cap) for c in a.idle_counts})
        self.results["idle_fd_cap"] = cap
        out = {"elicitgate": [], "nginx": []}
        for i, count in enumerate(counts):
            for t in (("elicitgate", "nginx") if i % 2 == 0 else ("nginx", "elicitgate")):
                r = mc.hold_idle(HOST, self.ports[t], "/mcp", count, self.pids[t], settle=a.idle_settle,
                                 concurrency=100, timeout=120)
                r["kib_per_stream"] = (r["rss_held_kib"] - r["rss_before_kib"]) / max(1, r["opened"])
                if t == "elicitgate":
                    r["sse_streams_open_after_close"] = self.metrics().get("elicitgate_sse_streams_open")
                out[t].append(r)
                if r["errors"]:
                    self.fail(f"idle {t} {count}: {r['errors']} streams failed to open")
                self.log(f"idle {t:10s} {count:6d} streams: RSS {r['rss_before_kib']} → {r['rss_held_kib']} KiB "
                         f"({r['kib_per_stream']:.1f} KiB/stream), after close {r['rss_after_close_kib']} KiB")
        self.results["idle"] = out

    def long(self):
        a = self.args
        out = {}
        for t in ("elicitgate", "nginx"):
            r = mc.long_stream(HOST, self.ports[t], "/mcp", self.sessions[t], a.long_bytes, self.pids[t],
                               samples=8, timeout=a.long_timeout)
            rss = [s["rss_kib"] for s in r["series"]]
            r["rss_start_kib"], r["rss_mid_kib"], r["rss_end_kib"] = rss[0], rss[len(rss) // 2], rss[-1]
            r["rss_max_kib"] = max(rss)
            out[t] = r
            if not r["complete"]:
                self.fail(f"long stream {t}: only {r['bytes']} bytes")
            self.log(f"long {t:10s} {r['bytes'] / (1 << 20):.0f} MiB at {r['mib_per_s']} MiB/s, RSS start "
                     f"{r['rss_start_kib']} mid {r['rss_mid_kib']} end {r['rss_end_kib']} max {r['rss_max_kib']} KiB")
        self.results["long"] = out

    # -- the whole run

    def run(self):
        a = self.args
        self.results["machine"] = machine()
        self.results["background_busy"] = round(busy_fraction(2.0 if not a.smoke else 0.5), 3)
        self.results["loadavg_start"] = loadavg()
        self.log(f"background CPU busy before start: {self.results['background_busy']:.0%}, "
                 f"loadavg {self.results['loadavg_start']}")
        self.start()
        self.sanity()
        phases = a.phases
        if not a.smoke and "small" in phases:
            self.warmup()
        # Pass-through phases first, on a gateway with empty enforcement state; the mix, which
        # fills the pending-elicitation tables, after them.
        if "small" in phases:
            self.interleaved_wrk("small", "small", a.connections, a.duration)
        if "small2026" in phases:
            self.interleaved_wrk("small2026", "small2026", a.connections, a.duration)
        if "rate" in phases:
            self.interleaved_wrk("rate", "small", a.rate_connections, a.duration, a.rate_delay_ms)
        if "large" in phases:
            self.interleaved_wrk("large", "large", a.large_connections, a.large_duration)
        if "sse" in phases:
            self.sse()
        self.peak_rss("peak_rss_kib")
        if "mix" in phases:
            self.interleaved_wrk("mix", "mix", a.connections, a.duration)
            self.peak_rss("peak_rss_after_mix_kib")
            if a.sse_after_mix and "sse" in phases:
                saved = self.results["sse"]
                self.sse()
                self.results["sse_after_mix"] = self.results["sse"]
                self.results["sse"] = saved
        if "idle" in phases:
            self.idle()
        if "long" in phases:
            self.long()
        self.results["loadavg_end"] = loadavg()


def machine():
    model, cores = "?", os.cpu_count()
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as f:
        mem_kib = int(f.readline().split()[1])
    return {"cores": cores, "cpu": model, "mem_gib": round(mem_kib / (1 << 20), 1),
            "kernel": os.uname().release}


# ---------------------------------------------------------------- report

def fmt_us(v):
    return "–" if v is None else f"{v / 1000:.3f}"


def ratio(a, b):
    return "–" if a is None or b in (None, 0) else f"{a / b:.2f}"


def report(res, args):
    L = []
    if res["smoke"]:
        L.append("**Smoke run: tiny counts (and usually a debug build); these numbers are not measurements.**")
        L.append("")
    m = res["machine"]
    L.append(f"Machine: {m['cores']} cores, {m['cpu']}, {m['mem_gib']} GiB RAM, Linux {m['kernel']}. "
             f"Background CPU busy before start {res['background_busy']:.0%}; loadavg "
             f"{res['loadavg_start']} at start, {res.get('loadavg_end', '?')} at end.")
    L.append("")
    L.append("| Measurement | direct | nginx | elicitgate | eg / nginx | eg / direct |")
    L.append("|---|---:|---:|---:|---:|---:|")
    num = lambda v: "–" if v is None else f"{v:.0f}"  # noqa: E731
    one = lambda v: "–" if v is None else f"{v:.1f}"  # noqa: E731
    mib = lambda v: "–" if v is None else f"{v / 1024:.1f}"  # noqa: E731

    def row(label, values, fmt=num, ratios=True):
        d, n, g = (values.get(t) for t in TARGETS)
        L.append(f"| {label} | {fmt(d)} | {fmt(n)} | {fmt(g)} | "
                 f"{ratio(g, n) if ratios else '–'} | {ratio(g, d) if ratios else '–'} |")

    def wrk_rows(key, title, large=False):
        r = res[key]["targets"]
        row(f"{title}: req/s", {t: r[t]["rps"] for t in TARGETS}, one if large else num)
        if large:
            row(f"{title}: MiB/s", {t: r[t]["bytes"] / r[t]["duration_s"] / (1 << 20) for t in TARGETS})
        for p, name in (("p50_us", "p50"), ("p99_us", "p99"), ("p999_us", "p99.9")):
            row(f"{title}: {name} latency (ms)", {t: r[t][p] for t in TARGETS}, fmt_us)
        added = {t: (r[t]["p99_us"] - r["direct"]["p99_us"]) if t != "direct" else None for t in TARGETS}
        positive = all(v is None or v > 0 for v in added.values())
        row(f"{title}: added p99 over direct (ms)", added, fmt_us, ratios=positive)
        row(f"{title}: proxy CPU per request (µs)", {t: r[t]["proxy_cpu_us_per_req"] for t in TARGETS}, one)
        row(f"{title}: upstream CPU per request (µs)", {t: r[t]["upstream_cpu_us_per_req"] for t in TARGETS},
            one, ratios=False)
        row(f"{title}: errors (all rounds)", {t: r[t]["errors"] for t in TARGETS}, ratios=False)
        row(f"{title}: other load on the machine, worst round (% CPU)",
            {t: 100 * r[t]["foreign_cpu_max"] for t in TARGETS}, num, ratios=False)

    if "small" in res:
        wrk_rows("small", f"small JSON, {res['small']['connections']} conns")
    if "rate" in res:
        rt = res["rate"]
        wrk_rows("rate", f"small JSON, paced {rt['connections'] * 1000 / rt['delay_ms']:.0f} req/s")
    if "large" in res:
        wrk_rows("large", f"1 MiB result, {res['large']['connections']} conns", large=True)
    if "small2026" in res:
        wrk_rows("small2026", f"small JSON, 2026-07-28 stateless (judged), {res['small2026']['connections']} conns")
    if "mix" in res:
        wrk_rows("mix", f"elicitation mix, {res['mix']['connections']} conns")

    def sse_rows(key, title):
        ss = res[key]["targets"]
        for k, label in (("ttfe_p50_us", "time to first event p50 (ms)"),
                         ("ttfe_p99_us", "time to first event p99 (ms)"),
                         ("delay_p50_us", "per-event delay p50 (ms)"),
                         ("delay_p99_us", "per-event delay p99 (ms)"),
                         ("delay_max_us", "per-event delay max (ms)")):
            row(f"{title}: {label}", {t: ss[t][k] for t in TARGETS}, fmt_us)

    if "sse" in res:
        sse_rows("sse", "SSE")
    if "sse_after_mix" in res:
        sse_rows("sse_after_mix", "SSE after the mix")
    for key, label in (("peak_rss_kib", "peak RSS after pass-through phases, VmHWM (MiB)"),
                       ("peak_rss_after_mix_kib", "peak RSS after the elicitation mix, VmHWM (MiB)")):
        if key in res:
            pk = res[key]
            row(label, {"direct": pk["upstream"], "nginx": pk["nginx"], "elicitgate": pk["elicitgate"]}, mib)
    L.append("")
    L.append(f"Rounds: {res['rounds']} (interleaved, order rotating); each cell is the median over rounds "
             f"(SSE: percentiles over all streams of all rounds). 'direct' RSS is the mock upstream's; "
             f"nginx RSS is master + {args.nginx_workers} workers. 'Other load' is CPU used by processes "
             f"outside the benchmark during a run, as a share of all cores.")
    if "peak_rss_after_mix_kib" in res:
        gm = res["peak_rss_after_mix_kib"].get("gateway_metrics", {})
        L.append(f"Gateway state after the mix: {gm}.")
    if "idle" in res:
        L.append("")
        L.append("Idle open SSE streams (GET), RSS of the proxy process(es):")
        L.append("")
        L.append("| streams | elicitgate RSS (MiB) | elicitgate KiB/stream | nginx RSS (MiB) | nginx KiB/stream |")
        L.append("|---:|---:|---:|---:|---:|")
        for g, n in zip(res["idle"]["elicitgate"], res["idle"]["nginx"]):
            L.append(f"| {g['opened']} | {mib(g['rss_held_kib'])} (from {mib(g['rss_before_kib'])}) | "
                     f"{g['kib_per_stream']:.1f} | {mib(n['rss_held_kib'])} (from {mib(n['rss_before_kib'])}) | "
                     f"{n['kib_per_stream']:.1f} |")
        if res.get("idle_fd_cap", 1 << 30) < max(args.idle_counts):
            L.append("")
            L.append(f"(Capped at {res['idle_fd_cap']} streams: each stream needs two descriptors in the proxy and "
                     f"the open-files limit here is {res['idle_fd_cap'] * 2 + 100}.)")
    if "long" in res:
        L.append("")
        L.append("One long SSE response (stream_forever, 16 KiB events), RSS sampled along the way:")
        L.append("")
        L.append("| proxy | bytes | MiB/s | RSS start (MiB) | mid | end | max |")
        L.append("|---|---:|---:|---:|---:|---:|---:|")
        for t, r in res["long"].items():
            L.append(f"| {t} | {r['bytes'] / (1 << 20):.0f} MiB | {r['mib_per_s']} | {mib(r['rss_start_kib'])} | "
                     f"{mib(r['rss_mid_kib'])} | {mib(r['rss_end_kib'])} | {mib(r['rss_max_kib'])} |")
    L.append("")
    L.append("Targets (SPEC §7):")
    L.append("")
    for line in verdicts(res):
        L.append(f"- {line}")
    return "\n".join(L)


def verdicts(res):
    """The targets of SPEC §7, each MET or MISSED."""
    out = []
    if "small" in res:
        s = res["small"]["targets"]
        g, n = s["elicitgate"]["rps"], s["nginx"]["rps"]
        out.append(f"{'MET' if g >= 1.1 * n else 'MISSED'}: throughput on small JSON ≥ 1.1× nginx ({g / n:.2f}×)")
    if "small2026" in res:
        s = res["small2026"]["targets"]
        g, n = s["elicitgate"]["rps"], s["nginx"]["rps"]
        out.append(f"{'MET' if g >= 1.1 * n else 'MISSED'}: throughput on small JSON, 2026-07-28 path, "
                   f"≥ 1.1× nginx ({g / n:.2f}×)")
    if "mix" in res:
        m = res["mix"]["targets"]
        g, n = m["elicitgate"]["rps"], m["nginx"]["rps"]
        out.append(f"{'MET' if g >= n else 'MISSED'}: elicitation mix ≥ 1.0× nginx ({g / n:.2f}×)")
    for key, name in (("small", "fixed concurrency"), ("rate", "paced rate")):
        if key in res:
            t = res[key]["targets"]
            d, n, g = (t[x]["p99_us"] for x in TARGETS)
            out.append(f"{'MET' if g <= n else 'MISSED'}: added p99 ≤ nginx's at {name} "
                       f"(elicitgate {(g - d) / 1000:+.3f} ms, nginx {(n - d) / 1000:+.3f} ms over direct)")
    if "sse" in res:
        ss = res["sse"]["targets"]
        g, n = ss["elicitgate"]["ttfe_p99_us"], ss["nginx"]["ttfe_p99_us"]
        g50, n50 = ss["elicitgate"]["ttfe_p50_us"], ss["nginx"]["ttfe_p50_us"]
        out.append(f"{'MET' if g50 <= n50 and g <= n else 'MISSED'}: SSE first event p50 and p99 ≤ nginx's "
                   f"(p50 {g50 / 1000:.3f} vs {n50 / 1000:.3f} ms, p99 {g / 1000:.3f} vs {n / 1000:.3f} ms)")
    if "long" in res:
        lg = res["long"]["elicitgate"]
        growth = lg["rss_max_kib"] - lg["rss_start_kib"]
        out.append(f"{'MET' if growth <= 8 * 1024 else 'MISSED'}: flat memory on the long stream "
                   f"(max − start = {growth / 1024:.1f} MiB over {lg['bytes'] / (1 << 20):.0f} MiB)")
    if "idle" in res:
        big = res["idle"]["elicitgate"][-1]
        out.append(f"{'MET' if big['kib_per_stream'] <= 16 else 'MISSED'}: ≤ 16 KiB per idle SSE stream "
                   f"({big['kib_per_stream']:.1f} KiB/stream at {big['opened']} streams; nginx "
                   f"{res['idle']['nginx'][-1]['kib_per_stream']:.1f})")
    return out


# ---------------------------------------------------------------- main

def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--smoke", action="store_true", help="a few seconds, tiny counts")
    p.add_argument("--gateway-bin", required=True)
    p.add_argument("--upstream-bin", required=True)
    p.add_argument("--nginx-bin", default=shutil.which("nginx") or "/usr/sbin/nginx")
    p.add_argument("--wrk-bin", default=shutil.which("wrk") or "/usr/bin/wrk")
    p.add_argument("--out", required=True, help="directory for report.md and results.json")
    p.add_argument("--rounds", type=int)
    p.add_argument("--duration", type=int, help="seconds per wrk run (small, rate, mix)")
    p.add_argument("--large-duration", type=int)
    p.add_argument("--connections", type=int, default=32)
    p.add_argument("--rate-connections", type=int, default=30)
    p.add_argument("--rate-delay-ms", type=int, default=10, help="paced rate = connections*1000/delay")
    p.add_argument("--large-connections", type=int, default=8)
    p.add_argument("--wrk-threads", type=int, default=2)
    p.add_argument("--upstream-threads", type=int, default=2)
    p.add_argument("--nginx-workers", type=int, default=os.cpu_count() or 2)
    p.add_argument("--sse-streams", type=int)
    p.add_argument("--sse-events", type=int)
    p.add_argument("--sse-interval-ms", type=int)
    p.add_argument("--idle-counts", type=lambda s: [int(x) for x in s.split(",")])
    p.add_argument("--idle-settle", type=float)
    p.add_argument("--long-bytes", type=int)
    p.add_argument("--long-timeout", type=float, default=300)
    p.add_argument("--phases", type=lambda s: set(s.split(",")),
                   default={"small", "small2026", "rate", "large", "sse", "mix", "idle", "long"},
                   help="comma-separated subset of small,small2026,rate,large,sse,mix,idle,long")
    p.add_argument("--quiet-wait", type=float, help="seconds to wait for a quiet machine before a run")
    p.add_argument("--quiet-threshold", type=float, default=0.10,
                   help="other CPU use (share of all cores) counted as quiet")
    p.add_argument("--disturbed-threshold", type=float, default=0.15,
                   help="other CPU use during a run that makes it be repeated")
    p.add_argument("--sse-after-mix", action="store_true",
                   help="measure SSE again after the mix (enforcement tables full)")
    args = p.parse_args()
    defaults = dict(rounds=1, duration=1, large_duration=1, sse_streams=5, sse_events=5, sse_interval_ms=1,
                    idle_counts=[1, 20, 100], idle_settle=0.3, long_bytes=32 << 20, quiet_wait=0) if args.smoke else \
        dict(rounds=3, duration=10, large_duration=6, sse_streams=100, sse_events=20, sse_interval_ms=2,
             idle_counts=[1, 1000, 10000], idle_settle=1.5, long_bytes=1 << 30, quiet_wait=120)
    for k, v in defaults.items():
        if getattr(args, k) is None:
            setattr(args, k, v)

    bench = Bench(args)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    started = time.monotonic()
    try:
        bench.run()
    finally:
        bench.started.stop_all()
    bench.results["wall_s"] = round(time.monotonic() - started, 1)
    text = report(bench.results, args)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "report.md"), "w") as f:
        f.write(text + "\n")
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump(bench.results, f, indent=1)
    print()
    print(text)
    print()
    print(f"wall time {bench.results['wall_s']} s; report and raw numbers in {args.out}")
    shutil.rmtree(bench.dir, ignore_errors=True)
    if bench.failures:
        print(f"{len(bench.failures)} harness failure(s):", *bench.failures, sep="\n  ")
        sys.exit(1)


if __name__ == "__main__":
    main()
