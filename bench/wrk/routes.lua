-- wrk script for bench/upstreams.ts: the tools/call of tools-call.lua, spread round-robin over several paths of
-- the same host (one gateway's routes, /mcp/u0 … /mcp/u8), and the same one-line JSON result.
--
-- Script arguments (after `--`):
--   1: tool name, already JSON-encoded (e.g. "\"bench\"")
--   2: tool arguments, a JSON object
--   3: the paths, comma-separated (e.g. /mcp/u0,/mcp/u1)
--   4…: extra headers, "Name: value"

local threads = {}
local body_head = '{"jsonrpc":"2.0","id":'
local body_tail
local paths = {}
local next_path = 0

function setup(thread)
  thread:set("thread_no", #threads)
  table.insert(threads, thread)
end

function init(args)
  local name = args[1] or '"bench"'
  local arguments = args[2] or '{}'
  body_tail = ',"method":"tools/call","params":{"name":' .. name .. ',"arguments":' .. arguments .. '}}'
  for p in string.gmatch(args[3] or "/mcp", "[^,]+") do table.insert(paths, p) end
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
  wrk.headers["Accept"] = "application/json, text/event-stream"
  local i = 4
  while args[i] do
    local k, v = string.match(args[i], "^([^:]+):%s*(.*)$")
    if k then wrk.headers[k] = v end
    i = i + 1
  end
  counter = (thread_no or 0) * 1000000000
  next_path = thread_no or 0
end

function request()
  counter = counter + 1
  next_path = next_path + 1
  local path = paths[(next_path % #paths) + 1]
  return wrk.format(nil, path, nil, body_head .. counter .. body_tail)
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
