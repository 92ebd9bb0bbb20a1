// The MCP surface of the demo upstream: one McpServer per session, with a
// quick tool, a slow tool with progress, an elicitation tool, error tools, a
// tool that talks on the standalone GET stream and resource subscriptions
// (plus, when asked for, a `touch` tool that fires them). The HTTP side lives
// in demo-upstream.ts.
import { setTimeout as delay } from "node:timers/promises";
import { McpServer, ResourceTemplate } from "@modelcontextprotocol/sdk/server/mcp.js";
import {
  ErrorCode,
  isJSONRPCRequest,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";
import type { CallToolResult, JSONRPCErrorResponse } from "@modelcontextprotocol/sdk/types.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import * as z from "zod";

const README = `# demo-upstream

A plain MCP server (SDK 1.x, protocol 2025-11-25) used to show off
mcp-task-gateway. Try \`slow_task\` through the gateway: past the gateway's
threshold it turns into a task you can poll.
`;

// Slow enough to show off task promotion, capped so a typo cannot hold a
// test runner hostage for hours.
const MAX_DURATION_MS = 600_000;

// A person may answer an elicitation slowly (and through the gateway it may
// travel as a task input request), so allow longer than the SDK's 60 s default.
const ELICITATION_TIMEOUT_MS = 600_000;

function text(value: string): CallToolResult {
  return { content: [{ type: "text", text: value }] };
}

export interface DemoServerOptions {
  /**
   * The URIs this session is subscribed to: `resources/subscribe` adds one,
   * `resources/unsubscribe` removes it. Pass a set to read it from outside.
   */
  subscriptions?: Set<string>;
  /**
   * When set, registers the `touch` tool, which calls this with its `uri`
   * argument (demo-upstream.ts broadcasts the change to every session).
   * Off by default, so the default tool list stays as documented.
   */
  onTouch?: (uri: string) => Promise<void>;
}

export function createDemoServer(opts: DemoServerOptions = {}): McpServer {
  const subscriptions = opts.subscriptions ?? new Set<string>();
  const server = new McpServer(
    { name: "demo-upstream", version: "1.0.0" },
    {
      // Registering resources turns on `resources.listChanged` as well.
      capabilities: { logging: {}, resources: { subscribe: true, listChanged: true } },
      instructions: "A demo server with quick, slow, interactive and failing tools.",
    },
  );

  // Subscriptions only record the URI: updates go out when something calls
  // `touch` (on the session's standalone GET stream, as in any 2025 server).
  server.server.setRequestHandler(SubscribeRequestSchema, (req) => {
    subscriptions.add(req.params.uri);
    return {};
  });
  server.server.setRequestHandler(UnsubscribeRequestSchema, (req) => {
    subscriptions.delete(req.params.uri);
    return {};
  });

  server.registerTool(
    "echo",
    {
      description: "Returns the text it was given, immediately.",
      inputSchema: { text: z.string().describe("Text to echo back") },
      annotations: { readOnlyHint: true },
    },
    ({ text: value }) => text(value),
  );

  server.registerTool(
    "add",
    {
      description: "Adds two numbers; the sum is also returned as structured content.",
      inputSchema: { a: z.number(), b: z.number() },
      outputSchema: { sum: z.number() },
      annotations: { readOnlyHint: true },
    },
    ({ a, b }) => ({
      content: [{ type: "text", text: String(a + b) }],
      structuredContent: { sum: a + b },
    }),
  );

  server.registerTool(
    "slow_task",
    {
      description:
        "Works for durationMs, reporting progress after each of `steps` steps when the caller sent a progressToken. Honours cancellation.",
      inputSchema: {
        durationMs: z.number().int().min(0).max(MAX_DURATION_MS).default(3000),
        steps: z.number().int().min(1).max(1000).default(5),
      },
    },
    async ({ durationMs, steps }, extra) => {
      const progressToken = extra._meta?.progressToken;
      for (let step = 1; step <= steps; step++) {
        // Rejects with an AbortError on cancellation; the SDK then drops the
        // response, as the protocol requires for a cancelled request.
        await delay(durationMs / steps, undefined, { signal: extra.signal });
        if (progressToken !== undefined) {
          // extra.sendNotification ties the notification to this request, so
          // it travels on the POST's SSE stream rather than the GET stream.
          await extra.sendNotification({
            method: "notifications/progress",
            params: { progressToken, progress: step, total: steps, message: `step ${step} of ${steps}` },
          });
        }
      }
      return text(`done after ${durationMs} ms in ${steps} steps`);
    },
  );

  server.registerTool(
    "ask_user",
    {
      description: "Asks the client for a name with elicitation/create and reports the answer.",
      inputSchema: { question: z.string().optional() },
    },
    async ({ question }, extra) => {
      // The SDK normalises a bare `elicitation: {}` to `{ form: {} }`.
      if (!server.server.getClientCapabilities()?.elicitation?.form) {
        return {
          ...text("ask_user needs a client that declares the elicitation capability (form mode)."),
          isError: true,
        };
      }
      const answer = await server.server.elicitInput(
        {
          mode: "form",
          message: question ?? "What is your name?",
          requestedSchema: {
            type: "object",
            properties: { name: { type: "string", title: "Name" } },
            required: ["name"],
          },
        },
        // Without relatedRequestId the request would go out on the standalone
        // GET stream instead of this call's own SSE stream.
        { relatedRequestId: extra.requestId, signal: extra.signal, timeout: ELICITATION_TIMEOUT_MS },
      );
      const content = answer.content === undefined ? "no content" : JSON.stringify(answer.content);
      return text(`action: ${answer.action}; content: ${content}`);
    },
  );

  server.registerTool(
    "fail",
    {
      description: "Returns a tool-level error (isError: true).",
      inputSchema: { message: z.string().default("this tool always fails") },
    },
    ({ message }) => ({ ...text(message), isError: true }),
  );

  server.registerTool(
    "throw_error",
    {
      description: "Answers with a JSON-RPC error (a protocol-level error, not isError).",
      inputSchema: { message: z.string().default("throw_error was called") },
    },
    // Never reached: McpServer turns anything a tool throws into an isError
    // result, so interceptThrowError() answers this tool at the transport.
    ({ message }) => {
      throw new Error(message);
    },
  );

  server.registerTool(
    "notify",
    {
      description:
        "Sends notifications/resources/list_changed and a log message on the session's standalone GET stream, then returns.",
    },
    async (extra) => {
      // No relatedRequestId: the transport routes these to the GET stream
      // (and drops them if the client has not opened one).
      await server.server.sendResourceListChanged();
      await server.server.sendLoggingMessage(
        { level: "info", logger: "demo-upstream", data: "notify was called" },
        extra.sessionId,
      );
      return text("notified");
    },
  );

  const onTouch = opts.onTouch;
  if (onTouch !== undefined) {
    server.registerTool(
      "touch",
      {
        description:
          "Pretends the resource at `uri` changed: sends notifications/resources/updated to every session subscribed to it and notifications/resources/list_changed to every session (on their GET streams).",
        inputSchema: { uri: z.string().describe("The resource that changed") },
      },
      async ({ uri }) => {
        await onTouch(uri);
        return text(`touched ${uri}`);
      },
    );
  }

  server.registerResource(
    "readme",
    "demo://readme",
    { title: "About this server", mimeType: "text/markdown" },
    (uri) => ({ contents: [{ uri: uri.href, mimeType: "text/markdown", text: README }] }),
  );

  server.registerResource(
    "item",
    new ResourceTemplate("demo://items/{id}", {
      list: () => ({
        resources: ["1", "2", "3"].map((id) => ({
          uri: `demo://items/${id}`,
          name: `item ${id}`,
          mimeType: "application/json",
        })),
      }),
    }),
    { title: "Demo item", mimeType: "application/json" },
    (uri, variables) => {
      const id = String(variables["id"]);
      return {
        contents: [{ uri: uri.href, mimeType: "application/json", text: JSON.stringify({ id, label: `Item ${id}` }) }],
      };
    },
  );

  server.registerPrompt(
    "greet",
    { description: "Greets someone by name.", argsSchema: { name: z.string().describe("Who to greet") } },
    ({ name }) => ({
      messages: [{ role: "user", content: { type: "text", text: `Please greet ${name} warmly.` } }],
    }),
  );

  return server;
}

/**
 * Makes `throw_error` answer with a real JSON-RPC error. McpServer catches
 * everything a tool handler throws and returns it as an isError result, so
 * the only public seam left is the transport's message handler.
 * Call after `server.connect(transport)`, which installs that handler.
 */
export function interceptThrowError(transport: Transport): void {
  const dispatch = transport.onmessage;
  transport.onmessage = (message, extra) => {
    if (isJSONRPCRequest(message) && message.method === "tools/call" && message.params?.["name"] === "throw_error") {
      const args = message.params["arguments"];
      const custom = typeof args === "object" && args !== null && "message" in args ? args.message : undefined;
      const error: JSONRPCErrorResponse = {
        jsonrpc: "2.0",
        id: message.id,
        error: {
          code: ErrorCode.InternalError,
          message: typeof custom === "string" ? custom : "throw_error was called",
        },
      };
      // Answer asynchronously, as the SDK's own handlers do, after the
      // transport has finished wiring this request to its response stream.
      void Promise.resolve()
        .then(() => transport.send(error))
        .catch((err: unknown) => transport.onerror?.(err instanceof Error ? err : new Error(String(err))));
      return;
    }
    dispatch?.(message, extra);
  };
}
