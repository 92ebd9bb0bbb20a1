// Which pooled legacy session serves a modern caller: one per distinct
// credentials and declared capabilities (in their legacy form), so callers
// never share a session that could answer differently for them.
import { legacyCapabilities } from "../protocol/era-translate.js";
import type { ModernRequest } from "../protocol/modern-request.js";
import type { SessionSpec } from "./legacy-sessions.js";
import type { Caller } from "../calls/caller.js";

export function sessionSpec(req: ModernRequest, caller: Pick<Caller, "credentialHeaders" | "partition">): SessionSpec {
  return {
    credentialHeaders: caller.credentialHeaders,
    capabilities: legacyCapabilities(req.envelope.clientCapabilities),
    clientInfo: req.envelope.clientInfo,
    partition: caller.partition,
  };
}
