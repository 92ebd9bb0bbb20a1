// The upstream's own credentials for this caller (upstreams.<name>.oauth), put in place of whatever the caller
// sent: the last step before the handler, so a request refused by any check before it costs no token, and a
// request forwarded to the replica that holds its session gets its token there, from the token it carries.
//
// The caller's own Authorization never reaches an upstream with oauth: the step replaces it. When the caller's
// user has not consented yet (userConsent), the request is answered with the consent link instead: an
// input_required elicitation for a 2026-07-28 client that takes URL elicitations on a request that may ask for
// input, else -32042 carrying the same link.
import { CredentialError, type CredentialOutcome, type CredentialSource } from "../credentials/source.js";
import {
  consentRequired,
  upstreamCredentialsRefused,
  upstreamCredentialsUnavailable,
  type Fault,
} from "../protocol/errors.js";
import { MRTR_METHODS } from "../protocol/era-translate.js";
import { isRecord } from "../protocol/json.js";
import { TASK_METHODS } from "../protocol/tasks-extension.js";
import { faultResponse, jsonResponse } from "../web/json-response.js";
import type { Callers } from "../policy/sets/identity.js";
import type { Logger } from "../log/logger.js";
import { parseBearer } from "../auth/jwt-verifier.js";
import type { Exchange } from "./exchange.js";
import { callerOf, whoOf } from "./identify.js";
import { step, type Step } from "./pipeline.js";

/** The key of the gateway's consent request among a 2026-07-28 answer's inputRequests. */
const CONSENT_INPUT_KEY = "mcp-gateway-consent";

/** The headers as the upstream is to see them, with `authorization` replaced by the upstream's own token. */
function withAuthorization(raw: readonly string[], accessToken: string): string[] {
  const out: string[] = [];
  for (let i = 0; i + 1 < raw.length; i += 2)
    if ((raw[i] as string).toLowerCase() !== "authorization") out.push(raw[i] as string, raw[i + 1] as string);
  out.push("authorization", `Bearer ${accessToken}`);
  return out;
}

/** Whether a 2026-07-28 client declared URL-mode elicitation on this request. */
function takesUrlElicitation(capabilities: Record<string, unknown>): boolean {
  const elicitation = capabilities.elicitation;
  return isRecord(elicitation) && isRecord(elicitation.url);
}

function consentAnswer(
  ex: Exchange,
  upstream: string,
  outcome: Extract<CredentialOutcome, { kind: "consent" }>,
): Response {
  const cls = ex.cls;
  const id = ex.post?.parsed?.id ?? null;
  if (
    cls?.era === "modern" &&
    "message" in cls &&
    cls.message.kind === "request" &&
    MRTR_METHODS.has(cls.message.method) &&
    takesUrlElicitation(cls.message.envelope.clientCapabilities)
  ) {
    // MRTR: the client shows the link, its user consents, and it sends the same request again; by then the
    // grant exists and the request goes on (the gateway keeps nothing of this round, so no requestState).
    return jsonResponse(200, {
      jsonrpc: "2.0",
      id: cls.message.id,
      result: {
        resultType: "input_required",
        inputRequests: {
          [CONSENT_INPUT_KEY]: {
            method: "elicitation/create",
            params: { mode: "url", message: outcome.message, url: outcome.url, elicitationId: outcome.elicitationId },
          },
        },
      },
    });
  }
  return faultResponse(id, consentRequired(upstream, outcome.url, outcome.elicitationId, outcome.message));
}

function credentialFault(err: CredentialError): Fault {
  return err.reason === "upstream_credentials_refused"
    ? upstreamCredentialsRefused(err.message)
    : upstreamCredentialsUnavailable(err.message);
}

/** Task methods the engine serves itself: no upstream request, so no token and never a consent round. */
function servedByGateway(ex: Exchange): boolean {
  const cls = ex.cls;
  return cls?.era === "modern" && "message" in cls && TASK_METHODS.has(cls.message.method);
}

export interface CredentialStepDeps {
  upstream: string;
  source: () => CredentialSource | undefined;
  callers: Callers;
  /** server.publicUrl: the base of consent links; else the request's own origin. */
  publicUrl: string | undefined;
  log: Logger;
}

export function credentialStep(deps: CredentialStepDeps): Step {
  return step("credentials", async (ex) => {
    const source = deps.source();
    if (!source || ex.method === "OPTIONS" || servedByGateway(ex)) return undefined;
    const parsed = parseBearer(ex.header("authorization"));
    const request = {
      upstream: deps.upstream,
      caller: callerOf(deps.callers, ex),
      subject: whoOf(deps.callers, ex).subject,
      // Only a token the gateway verified is ever exchanged.
      token: ex.verified && parsed.ok ? parsed.token : undefined,
      // Not ex.url(): a federated member's request may have no web request behind it.
      origin: deps.publicUrl ?? `${ex.scheme()}://${ex.host() ?? "localhost"}`,
    };
    let outcome: CredentialOutcome;
    try {
      outcome = await source.get(request);
    } catch (err) {
      if (!(err instanceof CredentialError)) throw err;
      deps.log.warn("no upstream credentials", { upstream: deps.upstream, reason: err.reason, cause: err.message });
      return faultResponse(ex.post?.parsed?.id ?? null, credentialFault(err));
    }
    if (outcome.kind === "consent") return consentAnswer(ex, deps.upstream, outcome);
    const base = ex.upstreamHeaders();
    ex.upstreamHeaderList = withAuthorization(base, outcome.accessToken);
    // The upstream refused it: one fresh token (a new exchange, a refresh), then the handler decides.
    ex.renewCredential = async () => {
      const again = await source.get({ ...request, fresh: true }).catch(() => undefined);
      if (again?.kind !== "token") return false;
      ex.upstreamHeaderList = withAuthorization(base, again.accessToken);
      return true;
    };
    return undefined;
  });
}
