// The auth gate in force (auth.jwt): the verifier, and the rule for what the upstream sees of the caller's
// credentials. Built from the config (policy-set.ts buildAuthGate), shared by every upstream's policy set.
import type { JwtVerifier, Principal } from "../../auth/jwt-verifier.js";
import type { Claims } from "../claims.js";

/** Who a verified token says is calling. `identity` is stable across token refreshes (issuer + identity claim). */
export interface VerifiedCaller {
  identity: string;
  /** The identity claim's value: what audit lines and the upstream identity header carry. */
  subject: string;
  claims: Claims;
}

type UpstreamCredentials = "forward" | "drop" | "identity";

export interface AuthGate {
  verifier: JwtVerifier;
  upstreamCredentials: UpstreamCredentials;
  /** Lowercase header name that carries the subject upstream in "identity" mode. */
  upstreamIdentityHeader: string;
  realm: string | undefined;
  /** The RFC 9728 metadata document's URL, named in every challenge. */
  resourceMetadataUrl: string | undefined;
  /** The RFC 9728 protected-resource metadata document, when auth.resourceMetadata configures it. */
  metadata: Readonly<Record<string, unknown>> | undefined;
}

/** What the routes keep of a verified token's principal. */
export function verifiedFrom(principal: Principal): VerifiedCaller {
  return { identity: principal.identity, subject: principal.subject, claims: principal.claims };
}
