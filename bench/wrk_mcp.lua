-- wrk script for bench/harness.py: MCP tools/call POSTs, and one machine-readable line at the end.
--
-- Environment:
--   BENCH_SCENARIO  small | small2026 | large | mix
--                   (small2026: the small call on the 2026-07-28 stateless path, whose JSON
--                   result the gateway judges; mix: elicit_legacy, small, elicit_2026, small, ...)
--   BENCH_SESSION   Mcp-Session-Id of a legacy session that declared form elicitation
--   BENCH_DELAY_MS  if > 0, each connection waits this long before each request, which turns
--                   wrk into a paced (fixed-rate) load: rate ~= connections * 1000 / delay.
--                   wrk starts the latency clock when the request is written, so the pause is
--                   not counted (no coordinated-omission correction: wrk2 is not in Debian).

local scenario = os.getenv("BENCH_SCENARIO") or "small"
local session = os.getenv("BENCH_SESSION") or ""
local delay_ms = tonumber(os.getenv("BENCH_DELAY_MS") or "0") or 0

local requests = {}
local n = 0

local function legacy_headers()
  return {
    ["Content-Type"] = "application/json",
    ["Accept"] = "application/json, text/event-stream",
    ["MCP-Protocol-Version"] = "2025-11-25",
    ["Mcp-Session-Id"] = session,
  }
end

local function modern_headers()
  return {
    ["Content-Type"] = "application/json",
    ["Accept"] = "application/json, text/event-stream",
    ["MCP-Protocol-Version"] = "2026-07-28",
  }
end

local function call(id, name)
  return '{"jsonrpc":"2.0","id":' .. id .. ',"method":"tools/call","params":{"name":"' .. name ..
    '","arguments":{"query":"weekly report"}}}'
end

local function call_2026(id, name)
  return '{"jsonrpc":"2.0","id":' .. id .. ',"method":"tools/call","params":{"name":"' .. name ..
    '","arguments":{"query":"weekly report"},"_meta":{' ..
    '"io.modelcontextprotocol/protocolVersion":"2026-07-28",' ..
    '"io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}}}}}'
end

function init(args)
  local path = wrk.path
  if scenario == "mix" then
    for i = 1, 16, 4 do
      requests[#requests + 1] = wrk.format("POST", path, legacy_headers(), call(i, "elicit_legacy"))
      requests[#requests + 1] = wrk.format("POST", path, legacy_headers(), call(i + 1, "small"))
      requests[#requests + 1] = wrk.format("POST", path, modern_headers(), call_2026(i + 2, "elicit_2026"))
      requests[#requests + 1] = wrk.format("POST", path, legacy_headers(), call(i + 3, "small"))
    end
  elseif scenario == "small2026" then
    for i = 1, 16 do
      requests[#requests + 1] = wrk.format("POST", path, modern_headers(), call_2026(i, "small"))
    end
  else
    for i = 1, 16 do
      requests[#requests + 1] = wrk.format("POST", path, legacy_headers(), call(i, scenario))
    end
  end
end

function request()
  n = n + 1
  if n > #requests then n = 1 end
  return requests[n]
end

if delay_ms > 0 then
  function delay()
    return delay_ms
  end
end

function done(summary, latency, _)
  local e = summary.errors
  io.write(string.format(
    'BENCHJSON {"requests":%d,"duration_s":%.6f,"bytes":%d,"p50_us":%d,"p90_us":%d,' ..
    '"p99_us":%d,"p999_us":%d,"max_us":%d,"mean_us":%.2f,"connect_errors":%d,"read_errors":%d,' ..
    '"write_errors":%d,"timeouts":%d,"non2xx":%d}\n',
    summary.requests, summary.duration / 1e6, summary.bytes,
    latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency:percentile(99.9), latency.max, latency.mean,
    e.connect, e.read, e.write, e.timeout, e.status))
end
