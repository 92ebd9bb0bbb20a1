// What a client is told about the gateway's bearer-token protection, as pure
// functions (no Hono, no I/O):
//   - the RFC 6750 `WWW-Authenticate: Bearer …` challenge of a 401 (or 403
//     insufficient_scope), with RFC 9728's `resource_metadata` parameter, which
//     the MCP authorization spec makes clients follow to find the authorization
//     server;
//   - the RFC 9728 protected resource metadata document, and where it is served.
import type { GatewayConfig } from "../config/schema.js";

/** The auth.resourceMetadata block (RFC 9728 field names). */
export type ResourceMetadataConfig = NonNullable<NonNullable<GatewayConfig["auth"]>["resourceMetadata"]>;

/** RFC 6750 §3.1 error codes. */
type BearerError = "invalid_request" | "invalid_token" | "insufficient_scope";

export interface BearerChallenge {
  realm?: string | undefined;
  /** Omit, with errorDescription, when the request carried no credentials at all (RFC 6750 §3.1). */
  error?: BearerError | undefined;
  errorDescription?: string | undefined;
  /** Space-separated scopes the resource needs (RFC 6750 §3; MCP's scope challenge for insufficient_scope). */
  scope?: string | undefined;
  /** The metadata document's URL (RFC 9728 §5.1), see `resourceMetadataUrl`. */
  resourceMetadata?: string | undefined;
}

/** RFC 9728 §3: the well-known path segment of protected resource metadata. */
const RESOURCE_METADATA_WELL_KNOWN = "/.well-known/oauth-protected-resource";

/**
 * An RFC 7230 quoted-string: backslash and double quote escaped, control
 * characters (CR and LF included, which would split the header) removed.
 */
function quoted(value: string): string {
  return `"${value.replace(/[\x00-\x1f\x7f]/g, "").replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}

/**
 * RFC 6750 §3 allows error_description and scope only %x20-21 / %x23-5B /
 * %x5D-7E: printable ASCII without `"` and `\`. Anything else is replaced, so
 * the value needs no escapes and every client parses it.
 */
function restrictedText(value: string): string {
  return value
    .replace(/"/g, "'")
    .replace(/\\/g, "/")
    .replace(/[^\x20-\x7e]/g, "?");
}

/**
 * The `WWW-Authenticate` value: `Bearer realm="…", error="…",
 * error_description="…", scope="…", resource_metadata="…"`, each attribute only
 * when given. Bare `Bearer` when nothing is.
 */
export function bearerChallenge(challenge: BearerChallenge): string {
  const params: string[] = [];
  if (challenge.realm !== undefined) params.push(`realm=${quoted(challenge.realm)}`);
  if (challenge.error !== undefined) {
    params.push(`error=${quoted(challenge.error)}`);
    if (challenge.errorDescription !== undefined)
      params.push(`error_description=${quoted(restrictedText(challenge.errorDescription))}`);
  }
  if (challenge.scope !== undefined) params.push(`scope=${quoted(restrictedText(challenge.scope))}`);
  if (challenge.resourceMetadata !== undefined) params.push(`resource_metadata=${quoted(challenge.resourceMetadata)}`);
  return params.length === 0 ? "Bearer" : `Bearer ${params.join(", ")}`;
}

/**
 * RFC 9728 §3.1: the metadata URL of a resource identifier is formed by putting
 * /.well-known/oauth-protected-resource between its host and its path (a lone
 * "/" path is dropped); the query stays, the fragment never exists.
 * https://gw.example/mcp → https://gw.example/.well-known/oauth-protected-resource/mcp
 */
export function resourceMetadataUrl(resource: string): string {
  const u = new URL(resource);
  const path = u.pathname === "/" ? "" : u.pathname;
  return `${u.origin}${RESOURCE_METADATA_WELL_KNOWN}${path}${u.search}`;
}

/**
 * The paths the gateway serves the metadata document at, for an MCP endpoint
 * at `mcpPath`: the RFC 9728 path-specific one (/.well-known/oauth-protected-resource/mcp),
 * and the root one, which MCP clients try when the path-specific one is not
 * found. `resource` (auth.resourceMetadata.resource) adds the path its
 * metadata URL names when the public path differs from the gateway's own
 * (a reverse proxy that adds a prefix and does not strip it).
 */
export function resourceMetadataPaths(mcpPath: string, resource?: string): string[] {
  const paths = [`${RESOURCE_METADATA_WELL_KNOWN}${mcpPath === "/" ? "" : mcpPath}`];
  if (resource !== undefined) paths.push(new URL(resourceMetadataUrl(resource)).pathname);
  paths.push(RESOURCE_METADATA_WELL_KNOWN);
  return [...new Set(paths)];
}

/**
 * The RFC 9728 §2 document (JSON), from auth.resourceMetadata: the fields as
 * configured, unset optional ones left out. Frozen; it is served as is.
 */
export function resourceMetadataDocument(config: ResourceMetadataConfig): Readonly<Record<string, unknown>> {
  const document: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(config)) {
    if (value !== undefined) document[key] = Array.isArray(value) ? Object.freeze([...value]) : value;
  }
  return Object.freeze(document);
}
