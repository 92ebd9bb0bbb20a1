// An MCP upstream that needs a bearer token (issue 35): the official SDK 1.x McpServer over
// StreamableHTTPServerTransport (2025-11-25, stateless: a fresh server per POST), on 127.0.0.1 port 0.
//
//   const as = await startAuthServer();
//   const up = await startTokenUpstream({ authServer: as });        // audience defaults to up.url
//   // the gateway gets up.url; tokens must be JWTs from `as` with aud = up.url (or `audience`)
//   expect(up.calls).toEqual([{ tool: "whoami", sub: "alice", act: { sub: gatewayClientId }, ... }]);
//
// Every POST must carry `Authorization: Bearer <JWT>`, verified with jose against the authorization
// server's JWKS, issuer and audience, at the upstream's own clock (`now`, so a test can move past a
// token's expiry without waiting). A missing, invalid or expired token gets 401 with
// `WWW-Authenticate: Bearer resource_metadata="<resourceMetadataUrl>"` (RFC 9728), and that URL serves
// the protected resource metadata naming the authorization server. A token lacking `requiredScopes`
// gets 403 insufficient_scope. The token is checked when a request arrives: a call already running
// finishes even if its token expires meanwhile (a task outliving its token).
//
// Tools: whoami → text `sub=<sub> act=<act.sub or ->`; slow_whoami {ms?, key?} → waits `ms`
// milliseconds, or until the test calls release(key), then answers `sub=<sub>`.
// Every accepted tools/call is recorded in `calls` (no token values).
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import type { AuthInfo } from "@modelcontextprotocol/sdk/server/auth/types.js";
import { createRemoteJWKSet, errors as joseErrors, jwtVerify, type JWTPayload } from "jose";
import { z } from "zod";

export interface TokenUpstreamOptions {
  /** Whose tokens are accepted (an AuthServer from oauth-server.ts fits). */
  authServer: { issuer: string; jwksUrl: string };
  /** The `aud` a token must carry. Default: the upstream's own URL (`url`). */
  audience?: string;
  /** Scopes every call needs; a token without them gets 403 insufficient_scope. Default: none. */
  requiredScopes?: string[];
  /** The clock tokens are checked against. Default: the real one. */
  now?: () => Date;
}

/** One accepted tools/call. */
interface TokenCall {
  tool: string;
  sub: string | undefined;
  /** The token's `act` claim (token exchange), if any. */
  act: Record<string, unknown> | undefined;
  aud: string | string[] | undefined;
  scope: string | undefined;
  clientId: string | undefined;
}

/** Why a request was refused (no token values). */
type Rejection = "missing" | "invalid" | "expired" | "insufficient_scope";

export interface TokenUpstream {
  /** The MCP endpoint, …/mcp; also the default audience and the RFC 9728 `resource`. */
  url: string;
  audience: string;
  /** Where the RFC 9728 metadata is served (the URL the 401 names). */
  resourceMetadataUrl: string;
  readonly calls: readonly TokenCall[];
  readonly rejections: readonly Rejection[];
  /** Resolves once slow_whoami {key} is running. */
  holding(key: string): Promise<void>;
  /** Lets slow_whoami {key} answer (now, or as soon as it arrives). */
  release(key: string): void;
  close(): Promise<void>;
}

type AuthedRequest = IncomingMessage & { auth?: AuthInfo };

interface Gate {
  open: () => void;
  opened: Promise<void>;
  arrived: () => void;
  running: Promise<void>;
}

export async function startTokenUpstream(opts: TokenUpstreamOptions): Promise<TokenUpstream> {
  const keys = createRemoteJWKSet(new URL(opts.authServer.jwksUrl));
  const calls: TokenCall[] = [];
  const rejections: Rejection[] = [];
  const gates = new Map<string, Gate>();
  const gate = (key: string): Gate => {
    let g = gates.get(key);
    if (!g) {
      let open = (): void => {};
      let arrived = (): void => {};
      const opened = new Promise<void>((r) => (open = r));
      const running = new Promise<void>((r) => (arrived = r));
      g = { open, opened, arrived, running };
      gates.set(key, g);
    }
    return g;
  };

  const http = createServer();
  await new Promise<void>((resolve, reject) => {
    http.once("error", reject);
    http.listen(0, "127.0.0.1", () => resolve());
  });
  const origin = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  const url = `${origin}/mcp`;
  const audience = opts.audience ?? url;
  // RFC 9728 section 3.1: the well-known name with the resource's path appended.
  const resourceMetadataUrl = `${origin}/.well-known/oauth-protected-resource/mcp`;
  const metadata = {
    resource: url,
    authorization_servers: [opts.authServer.issuer],
    bearer_methods_supported: ["header"],
    ...(opts.requiredScopes && { scopes_supported: opts.requiredScopes }),
  };

  const record = (tool: string, auth: AuthInfo | undefined): Record<string, unknown> => {
    const claims = (auth?.extra ?? {}) as JWTPayload;
    const act =
      typeof claims.act === "object" && claims.act !== null ? (claims.act as Record<string, unknown>) : undefined;
    calls.push({
      tool,
      sub: claims.sub,
      act,
      aud: claims.aud,
      scope: typeof claims.scope === "string" ? claims.scope : undefined,
      clientId: auth?.clientId,
    });
    return claims;
  };
  const text = (t: string) => ({ content: [{ type: "text" as const, text: t }] });

  const mcpServer = (): McpServer => {
    const server = new McpServer({ name: "token-upstream", version: "1.0.0" });
    server.registerTool("whoami", { description: "Returns the caller's sub and act." }, (extra) => {
      const claims = record("whoami", extra.authInfo);
      const act = (claims.act as { sub?: unknown } | undefined)?.sub;
      return text(`sub=${String(claims.sub)} act=${act === undefined ? "-" : String(act)}`);
    });
    server.registerTool(
      "slow_whoami",
      {
        description: "Waits ms milliseconds, or until the test releases key, then returns the caller's sub.",
        inputSchema: { ms: z.number().int().min(0).optional(), key: z.string().optional() },
      },
      async ({ ms, key }, extra) => {
        const claims = record("slow_whoami", extra.authInfo);
        await new Promise<void>((resolve, reject) => {
          extra.signal.addEventListener("abort", () => reject(new Error("cancelled")), { once: true });
          if (key !== undefined) {
            const g = gate(key);
            g.arrived();
            void g.opened.then(resolve);
          } else setTimeout(resolve, ms ?? 0);
        });
        return text(`sub=${String(claims.sub)}`);
      },
    );
    return server;
  };

  const challenge = (res: ServerResponse, status: 401 | 403, reason: Rejection, description?: string): void => {
    rejections.push(reason);
    const params = [
      ...(reason === "missing" ? [] : [`error="${status === 403 ? "insufficient_scope" : "invalid_token"}"`]),
      ...(description === undefined ? [] : [`error_description="${description}"`]),
      ...(status === 403 && opts.requiredScopes ? [`scope="${opts.requiredScopes.join(" ")}"`] : []),
      `resource_metadata="${resourceMetadataUrl}"`,
    ];
    res.writeHead(status, { "www-authenticate": `Bearer ${params.join(", ")}`, "content-type": "application/json" });
    res.end(JSON.stringify({ error: reason }));
  };

  /** The bearer token's claims, or undefined after answering 401/403. */
  const authenticate = async (req: IncomingMessage, res: ServerResponse): Promise<AuthInfo | undefined> => {
    const header = req.headers.authorization;
    const token = header?.startsWith("Bearer ") ? header.slice(7).trim() : undefined;
    if (!token) return void challenge(res, 401, "missing");
    let claims: JWTPayload;
    try {
      ({ payload: claims } = await jwtVerify(token, keys, {
        issuer: opts.authServer.issuer,
        audience,
        currentDate: (opts.now ?? (() => new Date()))(),
      }));
    } catch (err) {
      if (err instanceof joseErrors.JWTExpired) return void challenge(res, 401, "expired", "the token expired");
      return void challenge(res, 401, "invalid", "the token is not valid here");
    }
    const scopes = typeof claims.scope === "string" ? claims.scope.split(" ") : [];
    if (opts.requiredScopes?.some((s) => !scopes.includes(s))) return void challenge(res, 403, "insufficient_scope");
    return {
      token,
      clientId: typeof claims.client_id === "string" ? claims.client_id : "",
      scopes,
      ...(claims.exp !== undefined && { expiresAt: claims.exp }),
      extra: claims,
    };
  };

  const handle = async (req: AuthedRequest, res: ServerResponse): Promise<void> => {
    const path = new URL(req.url ?? "/", origin).pathname;
    if (req.method === "GET" && path.startsWith("/.well-known/oauth-protected-resource")) {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify(metadata));
      return;
    }
    if (path !== "/mcp") {
      res.writeHead(404).end();
      return;
    }
    const auth = await authenticate(req, res);
    if (auth === undefined) return;
    if (req.method !== "POST") {
      // Stateless: no standalone GET stream, no session to DELETE.
      res.writeHead(405, { allow: "POST" }).end();
      return;
    }
    req.auth = auth;
    const server = mcpServer();
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on("close", () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res);
  };
  http.on("request", (req: AuthedRequest, res: ServerResponse) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500).end();
      else res.destroy();
    });
  });

  let closing: Promise<void> | undefined;
  return {
    url,
    audience,
    resourceMetadataUrl,
    calls,
    rejections,
    holding: (key) => gate(key).running,
    release: (key) => gate(key).open(),
    close() {
      closing ??= new Promise<void>((resolve) => {
        for (const g of gates.values()) g.open();
        http.closeAllConnections();
        http.close(() => resolve());
      });
      return closing;
    },
  };
}
