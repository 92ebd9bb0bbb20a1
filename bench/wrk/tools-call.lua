-- wrk script for the bench: POSTs a JSON-RPC tools/call with the headers an MCP
-- Streamable HTTP client sends, and prints the result as one JSON line.
--
-- Script arguments (after `--`):
--   1: tool name, already JSON-encoded (e.g. "\"bench\"")
--   2: tool arguments, a JSON object
--   3…: extra headers, "Name: value" (e.g. Mcp-Session-Id); or "@paths=/mcp/a,/mcp/b": spread the requests
--       round-robin over these paths of the URL's host (bench/upstreams.ts: one gateway's routes)
--
-- Every request carries its own JSON-RPC id (thread number × 1e9 + counter), as
-- a real client would; a proxy that tracks ids must not see duplicates.

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
  -- wrk passes the URL as args[0]; our arguments start at args[1].
  local name = args[1] or '"bench"'
  local arguments = args[2] or '{}'
  body_tail = ',"method":"tools/call","params":{"name":' .. name .. ',"arguments":' .. arguments .. '}}'
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
  wrk.headers["Accept"] = "application/json, text/event-stream"
  local i = 3
  while args[i] do
    local list = string.match(args[i], "^@paths=(.*)$")
    if list then
      for p in string.gmatch(list, "[^,]+") do table.insert(paths, p) end
    else
      local k, v = string.match(args[i], "^([^:]+):%s*(.*)$")
      if k then wrk.headers[k] = v end
    end
    i = i + 1
  end
  counter = (thread_no or 0) * 1000000000
  next_path = thread_no or 0
end

function request()
  counter = counter + 1
  local path = nil
  if #paths > 0 then
    next_path = next_path + 1
    path = paths[(next_path % #paths) + 1]
  end
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
