// A gateway in front of userConsent upstreams (issue 35) for the oauth-consent*.test.ts files: the config
// (auth.jwt from a TestIdp, auth.vault, upstreams with oauth userConsent), a log the test can read, the legacy
// and modern calls a client makes, and the consent link followed in Chromium as its user would.
import { randomBytes } from "node:crypto";
import type { Browser } from "playwright-core";
import { expect } from "vitest";
import type { GatewayConfigInput } from "../../src/index.js";
import { createLogger, type Logger } from "../../src/log/logger.js";
import { consentInBrowser, launchChromium } from "./consent-browser.js";
import { startTestIdp, type TestIdp } from "./jwks.js";
import { modernRpc, type RpcAnswer } from "./modern-rpc.js";
import { startAuthServer, type AuthServer } from "./oauth-server.js";
import { startTokenUpstream, type TokenUpstream } from "./token-upstream.js";

const RESOURCE = "https://gateway.test/mcp";
export const vaultKey = (): string => randomBytes(32).toString("base64");

/** A modern client that takes URL elicitations (and tasks). */
export const URL_CAPS = { elicitation: { url: {} }, extensions: { "io.modelcontextprotocol/tasks": {} } };

export interface CapturedLog {
  logger: Logger;
  lines: string[];
  text(): string;
}

export function capturedLog(): CapturedLog {
  const lines: string[] = [];
  return { logger: createLogger("debug", (line) => lines.push(line)), lines, text: () => lines.join("") };
}

export function consentConfig(opts: {
  idp: { issuer: string; jwksUrl: string };
  upstreams: GatewayConfigInput["upstreams"];
  keys: string[];
  extra?: Partial<GatewayConfigInput>;
}): GatewayConfigInput {
  return {
    server: { host: "127.0.0.1", port: 0 },
    log: { level: "debug" },
    upstreams: opts.upstreams,
    auth: {
      jwt: { jwksUrl: opts.idp.jwksUrl, issuer: opts.idp.issuer, audience: RESOURCE },
      vault: { keys: opts.keys },
    },
    metrics: { enabled: true, token: "operator-token-0123456789" },
    ...opts.extra,
  };
}

/** A modern tools/call with `token`; URL elicitations declared unless `caps` says otherwise. */
export function modernCall(
  url: string,
  token: string,
  tool = "whoami",
  caps: Record<string, unknown> = URL_CAPS,
): Promise<RpcAnswer> {
  return modernRpc(
    url,
    "tools/call",
    { name: tool, arguments: {} },
    { name: tool, caps, headers: { authorization: `Bearer ${token}` } },
  );
}

/** The consent link of a modern answer: input_required with an elicitation/create in url mode. */
export function linkOfInputRequired(answer: RpcAnswer): string {
  const result = answer.body.result as
    | { resultType?: string; inputRequests?: Record<string, { method: string; params: { mode: string; url: string } }> }
    | undefined;
  expect(result?.resultType).toBe("input_required");
  const request = Object.values(result?.inputRequests ?? {})[0];
  expect(request).toMatchObject({ method: "elicitation/create", params: { mode: "url" } });
  return (request as { params: { url: string } }).params.url;
}

/** The consent link of a -32042 error (data.elicitations). */
export function linkOfError(error: { code: number; data?: unknown } | undefined): string {
  expect(error?.code).toBe(-32042);
  const elicitations = (error?.data as { elicitations?: unknown } | undefined)?.elicitations as
    { mode: string; url: string }[] | undefined;
  expect(elicitations?.[0]?.mode).toBe("url");
  return (elicitations?.[0] as { url: string }).url;
}

/** The user opens the link, signs in to the authorization server as `username` and allows; the gateway's page. */
export async function consentAs(
  browser: Browser,
  link: string,
  username: string,
  gatewayOrigin: string,
  upstream: string,
): Promise<{ text: string; url: URL }> {
  const landed = await consentInBrowser(browser, link, {
    username,
    landsOn: `${gatewayOrigin}/oauth/${upstream}/callback`,
  });
  return { text: landed.text, url: landed.url };
}

/** The text of a tools/call result (modern answer). */
export function textOfAnswer(answer: RpcAnswer): string {
  const content = (answer.body.result as { content?: { type: string; text: string }[] } | undefined)?.content;
  return content?.map((c) => c.text).join("") ?? JSON.stringify(answer.body);
}

/** The real parts every userConsent test runs against: the callers' IdP, the upstream's authorization server
 * (oidc-provider), an upstream that verifies its tokens, and Chromium for the consent pages. */
export interface ConsentParts {
  idp: TestIdp;
  as: AuthServer;
  upstream: TokenUpstream;
  browser: Browser;
  close(): Promise<void>;
}

export async function startConsentParts(authServer: Parameters<typeof startAuthServer>[0] = {}): Promise<ConsentParts> {
  // Started in order and, should one fail to start, the ones before it stopped again: a failed beforeAll leaves
  // no server or browser behind.
  const started: { close(): Promise<void> }[] = [];
  const close = async (): Promise<void> => {
    for (const part of started.splice(0).reverse()) await part.close();
  };
  try {
    const idp = await startTestIdp({ audience: RESOURCE });
    started.push(idp);
    const as = await startAuthServer(authServer);
    started.push(as);
    const upstream = await startTokenUpstream({ authServer: as });
    started.push(upstream);
    const browser = await launchChromium();
    started.push(browser);
    return { idp, as, upstream, browser, close };
  } catch (err) {
    await close();
    throw err;
  }
}
