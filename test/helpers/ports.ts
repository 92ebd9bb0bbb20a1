import { createServer } from "node:net";

/**
 * A TCP port on 127.0.0.1 that was free a moment ago: listen on port 0, read the
 * port the kernel picked, close. Someone else may grab it before the caller does,
 * so callers that spawn a process on it must retry on EADDRINUSE.
 */
export async function getFreePort(): Promise<number> {
  return await new Promise<number>((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      if (addr === null || typeof addr === "string") {
        srv.close();
        reject(new Error("could not read the address of a port-0 listener"));
        return;
      }
      const { port } = addr;
      srv.close((err) => (err ? reject(err) : resolve(port)));
    });
  });
}

/** A URL on 127.0.0.1 whose port has nothing listening (it was just freed). */
export async function getDeadUrl(path = "/mcp"): Promise<string> {
  const port = await getFreePort();
  return `http://127.0.0.1:${port}${path}`;
}
