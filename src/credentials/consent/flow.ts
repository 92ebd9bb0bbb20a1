// The consent flow every userConsent upstream shares, behind the gateway's /oauth/<upstream>/… routes
// (server/oauth-routes.ts): start (the consent link: PKCE and the redirect to the authorization server),
// callback (the code redeemed, the grant sealed and kept) and revoke (by the caller, or by an operator).
// It also makes each upstream's ConsentSource (the factory credentials/build.ts calls), and keeps the latest
// one per upstream name, so the routes serve the upstream as configured now.
//
// Binding. The consent link is made for the caller whose request needed it and signed (state.ts); the browser
// that opens it carries no gateway token, so the gateway cannot tell who opens it. What holds: the link is good
// for 10 minutes and opens once; /start refuses a request that does carry a verified token of another caller;
// the flow it starts is bound to that browser by a cookie, so a callback replayed or completed in another
// browser is refused; and the grant is always kept under the link's caller, never under whoever completes it.
// What cannot hold: a user who forwards their link to another person, who then consents with their own
// account, gives the first caller that account (as with any consent link: it is the link's bearer's to give).
import { createHash, randomBytes } from "node:crypto";
import type { OAuthConfig } from "../../config/oauth-schema.js";
import type { Logger } from "../../log/logger.js";
import { CredentialError, type CredentialObserver, type CredentialSource } from "../source.js";
import { tokenRequest, TokenEndpointError } from "../token-endpoint.js";
import { ConsentAuthority } from "./authority.js";
import type { GrantStore } from "./grant-store.js";
import { callbackUrl, ConsentSource, type ConsentEvents } from "./source.js";
import { newNonce, STATE_TTL_MS, StateSigner, type CallbackState, type StartTicket } from "./state.js";
import type { GrantVault } from "./vault.js";

/** What a consent route answers: a page (never with a token, code or verifier in it) or a redirect. */
export interface ConsentPage {
  status: number;
  title: string;
  text: string;
  /** A redirect's target (status 302/303). */
  location?: string | undefined;
  /** Set-Cookie values. */
  cookies?: string[] | undefined;
}

/** unavailable: the authorization server could not be asked which grant slot is meant (its discovery failed). */
export type RevokeOutcome = "revoked" | "none" | "unknown_upstream" | "unavailable";

export interface ConsentServiceParts {
  vault: GrantVault;
  store: GrantStore;
  events: ConsentEvents;
  log: Logger;
  now: () => number;
}

function sha256(text: string): string {
  return createHash("sha256").update(text).digest("base64url");
}

/** The cookie that binds a started flow to its browser: one per flow, so two flows in one browser do not clash. */
function bindingCookieName(nonce: string): string {
  return `mcpgw-consent-${nonce.slice(0, 16)}`;
}

const page = (status: number, title: string, text: string, cookies?: string[]): ConsentPage => ({
  status,
  title,
  text,
  ...(cookies && { cookies }),
});

const BAD_LINK =
  "This consent link is not valid: it has expired, has been used already, or was altered. Go back to your client and try the request again for a new link.";

export class ConsentService {
  private readonly signer: StateSigner;
  private readonly sources = new Map<string, ConsentSource>();

  constructor(private readonly parts: ConsentServiceParts) {
    this.signer = new StateSigner(parts.vault);
  }

  /** CredentialParts.consent: the source of one upstream's userConsent block (replacing an earlier one's). */
  source(
    upstream: string,
    oauth: OAuthConfig,
    resource: string,
    upstreamUrl: string,
    observer: CredentialObserver | undefined,
  ): CredentialSource {
    const { vault, store, events, log, now } = this.parts;
    const authority = new ConsentAuthority(upstream, oauth, upstreamUrl, store.backend, vault, now);
    const source = new ConsentSource(upstream, oauth, resource, authority, {
      store,
      signer: this.signer,
      events,
      observer,
      log,
      now,
    });
    this.sources.set(upstream, source);
    const close = source.close.bind(source);
    source.close = async () => {
      if (this.sources.get(upstream) === source) this.sources.delete(upstream);
      await close();
    };
    return source;
  }

  /**
   * GET /oauth/<upstream>/start?state=<ticket>: checks the ticket (signed, unexpired, for this upstream, not
   * used before; `presentedCaller`: the caller of a verified token the browser sent, if any, must be the
   * ticket's), then sends the browser to the authorization server with a fresh PKCE challenge.
   */
  async start(
    upstream: string,
    ticketText: string | undefined,
    presentedCaller: string | undefined,
  ): Promise<ConsentPage> {
    return this.unavailable(upstream, () => this.begin(upstream, ticketText, presentedCaller));
  }

  private async begin(
    upstream: string,
    ticketText: string | undefined,
    presentedCaller: string | undefined,
  ): Promise<ConsentPage> {
    const source = this.sources.get(upstream);
    if (!source) return page(404, "Unknown upstream", "No upstream of this gateway asks for consent under this name.");
    const now = this.parts.now();
    const checked = this.signer.verify<StartTicket>(ticketText, "start", now);
    if (!checked.ok || checked.value.upstream !== upstream) {
      this.parts.log.info("consent link refused", { upstream, why: checked.ok ? "for another upstream" : checked.why });
      return page(400, "Consent link not valid", BAD_LINK);
    }
    const ticket = checked.value;
    if (presentedCaller !== undefined && presentedCaller !== ticket.caller) {
      this.parts.log.warn("consent link opened with another caller's token", { upstream });
      return page(403, "Consent link of another user", "This consent link was made for another user of the gateway.");
    }
    if (!(await this.parts.store.claimNonce(`start:${ticket.nonce}`, ticket.exp - now + 1_000))) {
      this.parts.log.info("consent link refused", { upstream, why: "used before" });
      return page(400, "Consent link not valid", BAD_LINK);
    }
    const metadata = await source.authority.metadata();
    const authorize = metadata.authorization_endpoint;
    if (authorize === undefined)
      return page(502, "Consent unavailable", "The authorization server names no authorization endpoint.");
    const methods = metadata.code_challenge_methods_supported;
    if (methods !== undefined && !methods.includes("S256"))
      return page(502, "Consent unavailable", "The authorization server does not support PKCE with S256.");
    const redirectUri = callbackUrl(ticket.base, upstream);
    const client = await source.authority.client(metadata, redirectUri);
    const verifier = randomBytes(32).toString("base64url");
    const binding = randomBytes(32).toString("base64url");
    const nonce = newNonce();
    const state: CallbackState = {
      typ: "callback",
      caller: ticket.caller,
      upstream,
      base: ticket.base,
      nonce,
      exp: now + STATE_TTL_MS,
      issuer: metadata.issuer,
      clientId: client.clientId,
      sealed: this.parts.vault.seal(JSON.stringify({ verifier, subject: ticket.subject }), `pkce\n${nonce}`),
      browser: sha256(binding),
    };
    const location = new URL(authorize);
    const params: Record<string, string | undefined> = {
      response_type: "code",
      client_id: client.clientId,
      redirect_uri: redirectUri,
      scope: source.oauth.scopes.length > 0 ? source.oauth.scopes.join(" ") : undefined,
      resource: source.resource,
      code_challenge: sha256(verifier),
      code_challenge_method: "S256",
      state: this.signer.sign(state),
    };
    for (const [k, v] of Object.entries(params)) if (v !== undefined) location.searchParams.set(k, v);
    const secure = ticket.base.startsWith("https:") ? "; Secure" : "";
    const cookie = `${bindingCookieName(nonce)}=${binding}; Path=/oauth/${encodeURIComponent(upstream)}/; Max-Age=${STATE_TTL_MS / 1000}; HttpOnly; SameSite=Lax${secure}`;
    return { status: 302, title: "Redirecting", text: "", location: location.href, cookies: [cookie] };
  }

  /**
   * GET /oauth/<upstream>/callback: the state checked (signed, unexpired, this upstream, this browser, once),
   * the RFC 9207 `iss` checked, the code redeemed with the PKCE verifier and the grant kept under the state's
   * caller. `cookie(name)`: the request's cookie of that name.
   */
  async callback(
    upstream: string,
    query: (name: string) => string | undefined,
    cookie: (name: string) => string | undefined,
  ): Promise<ConsentPage> {
    return this.unavailable(upstream, () => this.complete(upstream, query, cookie));
  }

  /** An authorization server that cannot be asked (discovery, registration) is a page that says so, not a 500. */
  private async unavailable(upstream: string, run: () => Promise<ConsentPage>): Promise<ConsentPage> {
    try {
      return await run();
    } catch (err) {
      if (!(err instanceof CredentialError)) throw err;
      this.parts.log.warn("consent flow: the authorization server could not be asked", {
        upstream,
        cause: err.message,
      });
      return page(
        502,
        "Consent unavailable",
        "The authorization server of this upstream cannot be reached right now. Try again later.",
      );
    }
  }

  private async complete(
    upstream: string,
    query: (name: string) => string | undefined,
    cookie: (name: string) => string | undefined,
  ): Promise<ConsentPage> {
    const source = this.sources.get(upstream);
    if (!source) return page(404, "Unknown upstream", "No upstream of this gateway asks for consent under this name.");
    const now = this.parts.now();
    const refuse = (status: number, title: string, text: string, why: string): ConsentPage => {
      this.parts.log.info("consent callback refused", { upstream, why });
      return page(status, title, text);
    };
    const checked = this.signer.verify<CallbackState>(query("state"), "callback", now);
    if (!checked.ok) return refuse(400, "Consent not completed", BAD_LINK, checked.why);
    const state = checked.value;
    if (state.upstream !== upstream)
      return refuse(400, "Consent not completed", BAD_LINK, "state for another upstream");
    const name = bindingCookieName(state.nonce);
    const clear = `${name}=; Path=/oauth/${encodeURIComponent(upstream)}/; Max-Age=0; HttpOnly; SameSite=Lax`;
    const binding = cookie(name);
    if (binding === undefined || sha256(binding) !== state.browser)
      return refuse(
        403,
        "Consent not completed",
        "This consent was started in another browser. Open the consent link again in this browser.",
        "another browser",
      );
    // Single use, across replicas: a replayed callback (the same state) is refused.
    if (!(await this.parts.store.claimNonce(`callback:${state.nonce}`, state.exp - now + 1_000)))
      return refuse(400, "Consent not completed", BAD_LINK, "state used before");
    const metadata = await source.authority.metadata();
    // RFC 9207: the response names its issuer; it must be the one the flow was started with (mix-up defence). A
    // server configured by its URLs alone has no issuer to compare with: its endpoints are fixed by the config.
    const iss = query("iss");
    if (
      (iss !== undefined && state.issuer !== "" && iss !== state.issuer) ||
      (iss === undefined && metadata.authorization_response_iss_parameter_supported === true)
    )
      return refuse(
        400,
        "Consent not completed",
        "The answer came from an authorization server other than the one this consent was started with.",
        "wrong iss",
      );
    if (state.issuer !== metadata.issuer)
      return refuse(400, "Consent not completed", BAD_LINK, "the upstream's authorization server changed");
    const error = query("error");
    if (error !== undefined) {
      const denied = error === "access_denied";
      this.parts.log.info("consent not given", { upstream, error: error.slice(0, 40) });
      return {
        ...page(
          denied ? 403 : 400,
          denied ? "Consent declined" : "Consent not completed",
          denied
            ? `You declined to let the gateway call ${upstream} for you. You can close this page.`
            : "The authorization server did not complete the consent. Go back to your client and try again.",
        ),
        cookies: [clear],
      };
    }
    const code = query("code");
    if (code === undefined || code === "") return refuse(400, "Consent not completed", BAD_LINK, "no code");
    let sealed: { verifier: string; subject?: string | undefined };
    try {
      sealed = JSON.parse(this.parts.vault.open(state.sealed, `pkce\n${state.nonce}`)) as typeof sealed;
    } catch {
      return refuse(400, "Consent not completed", BAD_LINK, "sealed verifier does not open");
    }
    const redirectUri = callbackUrl(state.base, upstream);
    try {
      const client = await source.clientFor(metadata, state.clientId, state.base);
      const set = await tokenRequest(
        metadata.token_endpoint,
        {
          grant_type: "authorization_code",
          code,
          redirect_uri: redirectUri,
          code_verifier: sealed.verifier,
          resource: source.resource,
        },
        client,
        {
          timeoutMs: source.oauth.timeoutMs,
          now: this.parts.now,
          assertionAudience: metadata.issuer || metadata.token_endpoint,
        },
      );
      const slot = { issuer: ConsentAuthority.issuerKey(metadata), upstream, caller: state.caller };
      await this.parts.store.write(slot, {
        accessToken: set.accessToken,
        expiresAt: set.expiresAt,
        refreshToken: set.refreshToken,
        scope: set.scope,
        issuer: slot.issuer,
        clientId: state.clientId,
        subject: sealed.subject,
        grantedAt: now,
      });
    } catch (err) {
      const why = err instanceof TokenEndpointError ? err.message : "the code could not be redeemed";
      this.parts.log.warn("consent code redemption failed", { upstream, cause: why });
      return {
        ...page(
          502,
          "Consent not completed",
          "The authorization server did not accept the consent. Go back to your client and try again.",
        ),
        cookies: [clear],
      };
    }
    this.parts.events.granted(upstream, { subject: sealed.subject, caller: state.caller });
    return {
      ...page(200, "Consent given", `The gateway may now call ${upstream} for you. You can return to your client.`),
      cookies: [clear],
    };
  }

  /**
   * Deletes `caller`'s grant for `upstream` and, best effort, revokes its tokens at the server (RFC 7009).
   * `by`: the caller themself (its verified token) or an operator.
   */
  async revoke(upstream: string, caller: string, by: "caller" | "operator"): Promise<RevokeOutcome> {
    const source = this.sources.get(upstream);
    if (!source) return "unknown_upstream";
    let found;
    try {
      found = await source.slot(caller);
    } catch (err) {
      if (!(err instanceof CredentialError)) throw err;
      return "unavailable";
    }
    const { slot, metadata } = found;
    const read = await this.parts.store.read(slot);
    const removed = await this.parts.store.remove(slot);
    if (!removed) return "none";
    if (read.kind === "grant") {
      this.parts.events.revoked(upstream, { subject: read.grant.subject, caller }, by);
      const endpoint = metadata.revocation_endpoint;
      if (endpoint !== undefined) {
        const grant = read.grant;
        const token = grant.refreshToken ?? grant.accessToken;
        const client = await source
          .clientFor(metadata, grant.clientId, undefined)
          .catch(() => ({ clientId: grant.clientId, method: "none" as const }));
        await revokeAt(
          endpoint,
          token,
          grant.refreshToken !== undefined ? "refresh_token" : "access_token",
          client,
          source.oauth.timeoutMs,
        ).catch((err: unknown) =>
          this.parts.log.warn("token revocation at the authorization server failed", {
            upstream,
            cause: (err as Error).message,
          }),
        );
      }
    } else {
      this.parts.events.revoked(upstream, { caller }, by);
    }
    return "revoked";
  }
}

/** RFC 7009: the token (a refresh token revokes its grant) sent with the client's authentication. */
async function revokeAt(
  endpoint: string,
  token: string,
  hint: string,
  client: { clientId: string; method: string; clientSecret?: string | undefined },
  timeoutMs: number,
): Promise<void> {
  const form = new URLSearchParams({ token, token_type_hint: hint });
  const headers: Record<string, string> = { "content-type": "application/x-www-form-urlencoded" };
  if (client.method === "client_secret_basic" && client.clientSecret !== undefined)
    headers.authorization = `Basic ${Buffer.from(`${encodeURIComponent(client.clientId)}:${encodeURIComponent(client.clientSecret)}`).toString("base64")}`;
  else {
    form.set("client_id", client.clientId);
    if (client.method === "client_secret_post" && client.clientSecret !== undefined)
      form.set("client_secret", client.clientSecret);
  }
  const res = await fetch(endpoint, {
    method: "POST",
    headers,
    body: form.toString(),
    redirect: "error",
    signal: AbortSignal.timeout(timeoutMs),
  });
  await res.body?.cancel();
  if (!res.ok) throw new Error(`revocation at ${new URL(endpoint).origin} answered ${res.status}`);
}
