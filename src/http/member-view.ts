// A federated call handed straight to its member's route handler, on the Node path, as the member's own
// request: the same socket and response, the member's path, the body with the member's own name, and Mcp-Name
// saying that name. Why not app.fetch(new Request(…)), as lists do: a web Request, its body stream and a web
// Response for every call cost more than the whole route (bench/RESULTS.md, issue 22), and the member could not
// write its answer straight to the client's socket. Only requests whose answer goes back unchanged take this
// way; an answer the endpoint reads or edits (lists, task handles) still goes through the app.
//
// The member sees a view of the client's IncomingMessage: an object whose prototype is the message, with its own
// url, headers and rawHeaders. Everything else (socket, method, events) is the client's; the body was read
// already, and the view carries the member's instead (read-post.ts handOverBody).
import type { IncomingMessage } from "node:http";
import { Context } from "hono";
import { handOverBody } from "./read-post.js";
import type { NodeEnv } from "./node-env.js";

/** Header values replaced for the member (lowercase names); undefined removes the header. */
type Replaced = Readonly<Record<string, string | undefined>>;

function replacedRaw(raw: readonly string[], replaced: Replaced): string[] {
  const out: string[] = [];
  const done = new Set<string>();
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = (raw[i] as string).toLowerCase();
    if (!(name in replaced)) out.push(raw[i] as string, raw[i + 1] as string);
    else if (!done.has(name)) {
      done.add(name);
      const value = replaced[name];
      if (value !== undefined) out.push(name, value);
    }
  }
  for (const [name, value] of Object.entries(replaced))
    if (!done.has(name) && value !== undefined) out.push(name, value);
  return out;
}

/** The member's view of a client request: its path, its body (already read), these headers replaced. */
export function memberContext(c: Context, env: NodeEnv, path: string, body: Buffer, replaced: Replaced): Context {
  const incoming = env.incoming;
  const headers: IncomingMessage["headers"] & Record<string, string | string[] | undefined> = {
    ...incoming.headers,
    "content-length": String(body.length),
  };
  for (const [name, value] of Object.entries(replaced)) {
    if (value === undefined) delete headers[name];
    else headers[name] = value;
  }
  const q = (incoming.url ?? "").indexOf("?");
  const view = Object.create(incoming, {
    url: { value: q === -1 ? path : path + (incoming.url ?? "").slice(q) },
    headers: { value: headers },
    rawHeaders: { value: replacedRaw(incoming.rawHeaders, { ...replaced, "content-length": String(body.length) }) },
  }) as IncomingMessage;
  handOverBody(view, { ok: true, body });
  const member = new Context(c.req.raw, { env: { incoming: view, outgoing: env.outgoing }, path });
  // What the request carries on its way (its observation record, the verified token) is the member's too.
  for (const [key, value] of Object.entries(c.var as Record<string, unknown>)) member.set(key as never, value as never);
  return member;
}
