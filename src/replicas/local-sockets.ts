// Replicas of one host forwarding over Unix domain sockets (server.internalSocketDir; --workers makes a private
// directory for its workers). Each replica's internal listener also listens on <dir>/<name>.sock, its name derived
// from its replica id, so a replica that learns another's id (the owner of a session, the runner of a task) finds
// out whether that one shares its directory with a stat, and then forwards through the socket: no TCP stack, no
// TLS on a hop that never leaves the host, one connection kept warm as over TCP.
//
// Who can connect, and who can listen: only this user (and root). The directory must belong to this user with no
// access for group or others, checked at start, so no other local user can reach a socket in it or plant one that
// a replica would then forward clients' credentials to; each socket is also made 0600. What arrives on a socket is
// still checked for its replica credential (internal-listener.ts): a process of the same user is not a replica.
import { createHash } from "node:crypto";
import { lstatSync, statSync } from "node:fs";
import { join } from "node:path";

/** The form a socket's address takes where an internal listener's URL would be (forward.ts reads it). */
export const UNIX_ADDRESS = "unix:";

/** Longest path a Unix socket may have (sun_path is 108 bytes on Linux, 104 on macOS; one for the NUL). */
const MAX_SOCKET_PATH = 103;

/** Why `dir` may not hold replicas' sockets, or undefined when it may. */
export function unsafeSocketDir(dir: string): string | undefined {
  let st;
  try {
    // lstat: a symbolic link is refused, whoever owns what it points to.
    st = lstatSync(dir);
  } catch (err) {
    return `cannot be read (${(err as NodeJS.ErrnoException).code ?? String(err)})`;
  }
  if (!st.isDirectory()) return "is not a directory";
  const uid = process.getuid?.();
  if (uid !== undefined && st.uid !== uid) return `belongs to user ${st.uid}, not to this one (${uid})`;
  if ((st.mode & 0o077) !== 0) return `is open to other users (mode ${(st.mode & 0o777).toString(8)}; needs 0700)`;
  if (join(dir, `${"x".repeat(22)}.sock`).length > MAX_SOCKET_PATH) return "is too long a path for a Unix socket";
  return undefined;
}

/** The sockets of the replicas sharing one directory. */
export class LocalSockets {
  constructor(readonly dir: string) {}

  /** Where replica `replicaId` listens: a digest, so any id makes a short, safe file name. */
  pathOf(replicaId: string): string {
    const name = createHash("sha256").update(replicaId).digest("base64url").slice(0, 22);
    return join(this.dir, `${name}.sock`);
  }

  /**
   * `replicaId`'s socket address (unix:<path>) when it listens in this directory, else undefined (it runs on
   * another host, or with another directory: TCP). A socket left by a replica that died refuses the connection,
   * as its TCP port would; the caller caches the answer as it caches a registered address.
   */
  addressOf(replicaId: string): string | undefined {
    const path = this.pathOf(replicaId);
    try {
      return statSync(path).isSocket() ? `${UNIX_ADDRESS}${path}` : undefined;
    } catch {
      return undefined;
    }
  }
}
