// The consent flow's routes (upstreams.<name>.oauth userConsent), over an injected ConsentRoutes (the
// composition root passes credentials/consent/flow.ts's ConsentService):
//   GET    /oauth/<upstream>/start?state=…   the consent link: on to the authorization server
//   GET    /oauth/<upstream>/callback        where the authorization server sends the browser back
//   DELETE /oauth/<upstream>/grant           a caller revokes their own grant (its auth.jwt bearer token)
//   DELETE /oauth/<upstream>/grants?caller=… an operator revokes anyone's (metrics.token), by identity digest
//                                             or by subject (&issuer=, else the only auth.jwt issuer)
// The two GETs are top-level browser navigations: a request a browser marks as anything else (a fetch, a frame)
// is refused, and the pages forbid framing, scripts and referrers (the callback URL carries a code). No CORS:
// no other origin's page may read them. The DELETEs follow the MCP endpoint's Origin rules.
import type { Context, Hono } from "hono";
import type { GatewayConfig } from "../config/schema.js";
import type { ConsentPage, RevokeOutcome } from "../credentials/consent/flow.js";
import type { Logger } from "../log/logger.js";
import type { AuthGate } from "../policy/sets/auth-gate.js";
import { verifiedFrom } from "../policy/sets/auth-gate.js";
import { callerIdentity, type Callers } from "../policy/sets/identity.js";
import { isOriginAllowed } from "../protocol/origin.js";
import { metricsTokenCheck } from "./metrics-routes.js";

/** What the routes need of the consent flow. */
interface ConsentRoutes {
  start(upstream: string, ticket: string | undefined, presentedCaller: string | undefined): Promise<ConsentPage>;
  callback(
    upstream: string,
    query: (name: string) => string | undefined,
    cookie: (name: string) => string | undefined,
  ): Promise<ConsentPage>;
  revoke(upstream: string, caller: string, by: "caller" | "operator"): Promise<RevokeOutcome>;
}

export interface OAuthRouteDeps {
  consent: ConsentRoutes;
  config: GatewayConfig;
  callers: Callers;
  gate: () => AuthGate | undefined;
  log: Logger;
}

const PAGE_HEADERS = {
  "content-type": "text/html; charset=utf-8",
  "cache-control": "no-store",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
  "content-security-policy":
    "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
};

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function render(p: ConsentPage): Response {
  const headers = new Headers(PAGE_HEADERS);
  for (const cookie of p.cookies ?? []) headers.append("set-cookie", cookie);
  if (p.location !== undefined) {
    headers.set("location", p.location);
    return new Response(null, { status: p.status, headers });
  }
  const body = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(p.title)}</title><style>body{font-family:system-ui,sans-serif;max-width:40rem;margin:4rem auto;padding:0 1rem}</style></head><body><h1>${escapeHtml(p.title)}</h1><p>${escapeHtml(p.text)}</p></body></html>`;
  return new Response(body, { status: p.status, headers });
}

/** A browser's own word that this is not a top-level navigation (Fetch Metadata): a fetch, a frame, an image. */
function notNavigation(c: Context): boolean {
  const mode = c.req.header("sec-fetch-mode");
  const dest = c.req.header("sec-fetch-dest");
  return (mode !== undefined && mode !== "navigate") || (dest !== undefined && dest !== "document");
}

function cookieOf(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? "").split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

function json(status: number, body: unknown, extra: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json", "cache-control": "no-store", ...extra },
  });
}

export function registerOAuthRoutes(app: Hono, deps: OAuthRouteDeps): void {
  const { consent, config, log } = deps;
  const operatorToken = metricsTokenCheck(config.metrics.token);
  const navigation = (c: Context): Response | undefined =>
    notNavigation(c)
      ? render({ status: 403, title: "Not allowed", text: "Open this link in the browser, as a page." })
      : undefined;

  /** The verified caller of a request's bearer token: undefined for none, "refused" for one that does not verify. */
  const bearerCaller = async (c: Context): Promise<string | "refused" | undefined> => {
    const authorization = c.req.header("authorization");
    if (authorization === undefined) return undefined;
    const gate = deps.gate();
    if (!gate) return "refused";
    const outcome = await gate.verifier.verify(authorization);
    if (!outcome.ok) return "refused";
    // The pipeline's own digest of a verified caller (server/identify.ts callerOf).
    return deps.callers.digest(
      verifiedFrom(outcome.principal),
      undefined,
      () => undefined,
      () => [],
    );
  };

  app.get("/oauth/:upstream/start", async (c) => {
    const refused = navigation(c);
    if (refused) return refused;
    const presented = await bearerCaller(c);
    if (presented === "refused")
      return render({ status: 401, title: "Not allowed", text: "The token sent with this request does not verify." });
    return render(await consent.start(c.req.param("upstream"), c.req.query("state"), presented));
  });

  app.get("/oauth/:upstream/callback", async (c) => {
    const refused = navigation(c);
    if (refused) return refused;
    const cookies = c.req.header("cookie");
    return render(
      await consent.callback(
        c.req.param("upstream"),
        (name) => c.req.query(name),
        (name) => cookieOf(cookies, name),
      ),
    );
  });

  const originRefused = (c: Context): Response | undefined => {
    const origin = c.req.header("origin");
    if (isOriginAllowed(origin, config.server)) return undefined;
    log.warn("rejected a grant revocation from a disallowed origin", { origin });
    return json(403, { error: "origin_not_allowed" });
  };
  const revoked = (outcome: RevokeOutcome): Response =>
    outcome === "unknown_upstream"
      ? json(404, { error: "unknown_upstream" })
      : outcome === "unavailable"
        ? json(502, { error: "authorization_server_unavailable" })
        : json(200, { revoked: outcome === "revoked" });

  app.delete("/oauth/:upstream/grant", async (c) => {
    const refused = originRefused(c);
    if (refused) return refused;
    const caller = await bearerCaller(c);
    if (caller === undefined || caller === "refused")
      return json(401, { error: "invalid_token" }, { "www-authenticate": 'Bearer realm="mcp-task-gateway"' });
    return revoked(await consent.revoke(c.req.param("upstream"), caller, "caller"));
  });

  app.delete("/oauth/:upstream/grants", async (c) => {
    const refused = originRefused(c);
    if (refused) return refused;
    if (config.metrics.token === undefined) return json(403, { error: "operator revocation needs metrics.token" });
    if (!operatorToken(c.req.header("authorization")))
      return json(401, { error: "invalid_token" }, { "www-authenticate": 'Bearer realm="metrics"' });
    const caller = operatorCaller(c, config);
    if (caller === undefined) return json(400, { error: "give caller=<identity digest>, or subject= (and issuer=)" });
    return revoked(await consent.revoke(c.req.param("upstream"), caller, "operator"));
  });
}

/** The caller an operator names: its identity digest, or the subject (and issuer) it is computed from. */
function operatorCaller(c: Context, config: GatewayConfig): string | undefined {
  const digest = c.req.query("caller");
  if (digest !== undefined && digest !== "") return digest;
  const subject = c.req.query("subject");
  if (subject === undefined || subject === "") return undefined;
  const configured = config.auth?.jwt.issuer;
  const issuer =
    c.req.query("issuer") ??
    (typeof configured === "string" ? configured : configured?.length === 1 ? configured[0] : undefined);
  if (issuer === undefined) return undefined;
  // The same identity the verifier gives a token of this issuer and subject (auth/jwt-verifier.ts).
  return callerIdentity(`${issuer}\n${subject}`, "jwt");
}
