// The consent flow of userConsent upstreams (credentials/consent/), built once per gateway when auth.vault is
// configured: the vault from auth.vault.keys, the grant store on the replicas' shared Redis (tasks.store
// redis://) or this process's memory, and the audit lines of grants given, first used and revoked.
import type { GatewayConfig } from "../config/schema.js";
import { ConsentService } from "../credentials/consent/flow.js";
import { GrantStore, MemoryGrantBackend } from "../credentials/consent/grant-store.js";
import { GrantVault } from "../credentials/consent/vault.js";
import type { AuditLog } from "../log/audit.js";
import type { Logger } from "../log/logger.js";
import type { TaskState } from "./shared-state.js";

/** A grant with a refresh token is kept this long unused (the server's refresh token may die sooner). */
const GRANT_TTL_MS = 30 * 24 * 3_600_000;
/** Most entries (grants, nonces, registrations) this process keeps without a shared store. */
const MEMORY_GRANTS = 100_000;

export function consentService(
  config: GatewayConfig,
  parts: { state: TaskState; audit: AuditLog; log: Logger; now: () => number },
): ConsentService | undefined {
  const keys = config.auth?.vault?.keys;
  if (keys === undefined) return undefined;
  const { audit, log, now } = parts;
  const vault = new GrantVault(keys);
  const backend = parts.state.shared?.grants ?? new MemoryGrantBackend(MEMORY_GRANTS, now);
  return new ConsentService({
    vault,
    store: new GrantStore(backend, vault, GRANT_TTL_MS, now),
    events: {
      granted: (upstream, who) => audit.consent(who, upstream, "granted"),
      used: (upstream, who) => audit.consent(who, upstream, "used"),
      revoked: (upstream, who, by) => audit.consent(who, upstream, "revoked", by),
    },
    log,
    now,
  });
}
