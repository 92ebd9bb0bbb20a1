// The span attribute names the gateway sets, from the OpenTelemetry semantic
// conventions. Stable HTTP/network names come from @opentelemetry/semantic-conventions;
// the MCP, JSON-RPC and GenAI names are still "incubating" there, and OpenTelemetry
// advises copying incubating names rather than importing the incubating entry point
// (it may break in a minor release), so they are spelled out here.
export {
  ATTR_CLIENT_ADDRESS,
  ATTR_ERROR_TYPE,
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_HTTP_ROUTE,
  ATTR_NETWORK_PROTOCOL_VERSION,
  ATTR_SERVER_ADDRESS,
  ATTR_SERVER_PORT,
  ATTR_URL_FULL,
  ATTR_URL_PATH,
  ATTR_URL_SCHEME,
  ATTR_USER_AGENT_ORIGINAL,
} from "@opentelemetry/semantic-conventions";

// MCP semantic conventions (semantic-conventions 1.37+, incubating; now kept in the GenAI conventions repository).
export const ATTR_MCP_METHOD_NAME = "mcp.method.name";
export const ATTR_MCP_SESSION_ID = "mcp.session.id";
export const ATTR_MCP_PROTOCOL_VERSION = "mcp.protocol.version";
export const ATTR_MCP_RESOURCE_URI = "mcp.resource.uri";
export const ATTR_JSONRPC_REQUEST_ID = "jsonrpc.request.id";
// GenAI tool-call conventions, which the MCP conventions use for tools/call.
export const ATTR_GEN_AI_OPERATION_NAME = "gen_ai.operation.name";
export const GEN_AI_OPERATION_EXECUTE_TOOL = "execute_tool";
export const ATTR_GEN_AI_TOOL_NAME = "gen_ai.tool.name";
export const ATTR_GEN_AI_PROMPT_NAME = "gen_ai.prompt.name";

// The gateway's own (no convention exists for MCP tasks): a task's id prefix, status and poll hints.
export const ATTR_TASK_ID = "mcp.task.id";
export const ATTR_TASK_STATUS = "mcp.task.status";
export const ATTR_TASK_TTL_MS = "mcp.task.ttl_ms";
