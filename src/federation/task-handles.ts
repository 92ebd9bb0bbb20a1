// Task ids a federated endpoint hands out for the tasks of an upstream that serves the Tasks extension itself.
// Such an upstream keeps its own tasks, under ids of its own choosing: two upstreams may both say "task-1", and
// an id says nothing of which upstream it belongs to or of who made it. So the endpoint never shows them.
// It shows a handle instead: `<upstream>.~<sealed>`, where <sealed> is the upstream's id and the caller's
// identity digest under AES-256-GCM with a fresh 96-bit nonce, the upstream's name bound in as associated data.
//   - Ids of two upstreams never collide: each handle names its upstream, and is unique by its nonce.
//   - A caller can never name another's task: a handle only opens with the key, and opens to the identity of the
//     caller it was made for (the endpoint compares); a forged or altered one does not open at all.
//   - Nothing to store or share: every replica holding the key (derived from the requestState key, which
//     replicas on one store share) opens every handle, and a handle lives as long as the upstream keeps the task.
// "~" is not in base64url, so a handle is never taken for a task id of the gateway's own (task-id.ts).
// Pure: no I/O.
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from "node:crypto";

const MARK = ".~";
const NONCE_BYTES = 12;
const TAG_BYTES = 16;

/** What a handle stands for. */
export interface TaskHandle {
  /** The upstream that keeps the task. */
  upstream: string;
  /** The id the upstream gave it. */
  upstreamId: string;
  /** The identity digest of the caller it was made for. */
  owner: string;
}

export class TaskHandles {
  private readonly key: Buffer;

  /** `secret`: at least 32 bytes; a key of its own is derived from it (HKDF), so it is never used twice. */
  constructor(secret: Buffer) {
    this.key = Buffer.from(hkdfSync("sha256", secret, "", "mcp-task-gateway federated task handle", 32));
  }

  /** True when `id` has the form of a handle (whether it opens is another matter). */
  static isHandle(id: string): boolean {
    return id.includes(MARK);
  }

  issue(handle: TaskHandle): string {
    const nonce = randomBytes(NONCE_BYTES);
    const cipher = createCipheriv("aes-256-gcm", this.key, nonce);
    cipher.setAAD(Buffer.from(handle.upstream));
    const sealed = Buffer.concat([
      cipher.update(JSON.stringify([handle.upstreamId, handle.owner]), "utf8"),
      cipher.final(),
    ]);
    return `${handle.upstream}${MARK}${Buffer.concat([nonce, sealed, cipher.getAuthTag()]).toString("base64url")}`;
  }

  /** What `id` stands for; undefined when it is not a handle this key made (forged, altered, or another key's). */
  open(id: string): TaskHandle | undefined {
    const at = id.indexOf(MARK);
    if (at <= 0) return undefined;
    const upstream = id.slice(0, at);
    const bytes = Buffer.from(id.slice(at + MARK.length), "base64url");
    if (bytes.length <= NONCE_BYTES + TAG_BYTES) return undefined;
    try {
      const decipher = createDecipheriv("aes-256-gcm", this.key, bytes.subarray(0, NONCE_BYTES));
      decipher.setAAD(Buffer.from(upstream));
      decipher.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES));
      const plain = Buffer.concat([
        decipher.update(bytes.subarray(NONCE_BYTES, bytes.length - TAG_BYTES)),
        decipher.final(),
      ]).toString("utf8");
      const parsed: unknown = JSON.parse(plain);
      if (!Array.isArray(parsed) || typeof parsed[0] !== "string" || typeof parsed[1] !== "string") return undefined;
      return { upstream, upstreamId: parsed[0], owner: parsed[1] };
    } catch {
      return undefined;
    }
  }
}
