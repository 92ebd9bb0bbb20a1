-- wrk script for the Tasks benchmarks: MCP requests of either era, and
-- tasks/get cycling over a list of task ids (a fresh Mcp-Name per request).
--
-- Script arguments (after `--`), key=value:
--   method=tools/call|tasks/get
--   era=modern|legacy      modern: 2026-07-28 headers and _meta declaring the
--                          io.modelcontextprotocol/tasks extension
--   name=<tool>            tools/call: the tool name
--   args=<json object>     tools/call: the arguments
--   ids=<file>             tasks/get: one task id per line
--   header=<Name: value>   an extra header (repeatable), e.g. Mcp-Session-Id
--
-- Every request carries its own JSON-RPC id (thread number x 1e9 + counter).
-- The result is printed as one JSON line, as bench/wrk/tools-call.lua does.

local threads = {}

function setup(thread)
  thread:set("thread_no", #threads)
  table.insert(threads, thread)
end

local META = '"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",' ..
  '"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}},' ..
  '"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"0.0.0"}}'

local body_head = '{"jsonrpc":"2.0","id":'
local body_mid
local body_tail
local ids
local nids = 0
local cursor = 0

function init(args)
  local opts = { headers = {} }
  local i = 1
  while args[i] do
    local k, v = string.match(args[i], "^([%w_]+)=(.*)$")
    if k == "header" then
      local hk, hv = string.match(v, "^([^:]+):%s*(.*)$")
      if hk then opts.headers[hk] = hv end
    elseif k then
      opts[k] = v
    end
    i = i + 1
  end
  local method = opts.method or "tools/call"
  local modern = (opts.era or "modern") == "modern"
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
  wrk.headers["Accept"] = "application/json, text/event-stream"
  for k, v in pairs(opts.headers) do wrk.headers[k] = v end
  if modern then
    wrk.headers["Mcp-Protocol-Version"] = "2026-07-28"
    wrk.headers["Mcp-Method"] = method
  end
  if method == "tasks/get" then
    ids = {}
    for line in io.lines(opts.ids) do
      if line ~= "" then table.insert(ids, line) end
    end
    nids = #ids
    if nids == 0 then error("no task ids in " .. tostring(opts.ids)) end
    -- Threads start at different places in the list.
    cursor = ((thread_no or 0) * math.floor(nids / 2)) % nids
    body_mid = ',"method":"tasks/get","params":{"taskId":"'
    body_tail = '",' .. META .. '}}'
  else
    local name = opts.name or "bench"
    if modern then wrk.headers["Mcp-Name"] = name end
    body_tail = ',"method":"tools/call","params":{"name":"' .. name .. '","arguments":' .. (opts.args or "{}") ..
      (modern and (',' .. META) or '') .. '}}'
  end
  counter = (thread_no or 0) * 1000000000
end

function request()
  counter = counter + 1
  if ids then
    cursor = cursor % nids + 1
    local id = ids[cursor]
    wrk.headers["Mcp-Name"] = id
    return wrk.format(nil, nil, nil, body_head .. counter .. body_mid .. id .. body_tail)
  end
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
