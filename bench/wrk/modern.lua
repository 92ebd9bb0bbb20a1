-- wrk script for bench/federation.ts: one 2026-07-28 ("modern") request, tools/list or tools/call, with the
-- per-request _meta envelope and the headers that mirror it (MCP-Protocol-Version, Mcp-Method, Mcp-Name). The
-- client declares no capabilities (bench/wrk/mcp.lua declares the tasks extension, which this bench must
-- not). Prints the result as one JSON line, as bench/wrk/tools-call.lua does.
--
-- Script arguments (after `--`), key=value:
--   method=tools/list|tools/call
--   name=<tool>            tools/call: the tool name (and Mcp-Name)
--   args=<json object>     tools/call: the arguments
--
-- Every request carries its own JSON-RPC id (thread number x 1e9 + counter).

local threads = {}

function setup(thread)
  thread:set("thread_no", #threads)
  table.insert(threads, thread)
end

local META = '"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",' ..
  '"io.modelcontextprotocol/clientCapabilities":{},' ..
  '"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"0.0.0"}}'

local body_head = '{"jsonrpc":"2.0","id":'
local body_tail

function init(args)
  local opts = {}
  local i = 1
  while args[i] do
    local k, v = string.match(args[i], "^([%w_]+)=(.*)$")
    if k then opts[k] = v end
    i = i + 1
  end
  local method = opts.method or "tools/list"
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
  wrk.headers["Accept"] = "application/json, text/event-stream"
  wrk.headers["Mcp-Protocol-Version"] = "2026-07-28"
  wrk.headers["Mcp-Method"] = method
  if method == "tools/call" then
    local name = opts.name or "bench"
    wrk.headers["Mcp-Name"] = name
    body_tail = ',"method":"tools/call","params":{"name":"' .. name .. '","arguments":' .. (opts.args or "{}") ..
      ',' .. META .. '}}'
  else
    body_tail = ',"method":"' .. method .. '","params":{' .. META .. '}}'
  end
  counter = (thread_no or 0) * 1000000000
end

function request()
  counter = counter + 1
  return wrk.format(nil, nil, nil, body_head .. counter .. body_tail)
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'WRK_JSON {"requests":%d,"durationUs":%d,"bytes":%d,' ..
    '"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},' ..
    '"latencyUs":{"p50":%.1f,"p90":%.1f,"p99":%.1f,"p999":%.1f,"mean":%.1f,"max":%.1f}}\n',
    summary.requests, summary.duration, summary.bytes,
    e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency:percentile(99.9),
    latency.mean, latency.max))
end
