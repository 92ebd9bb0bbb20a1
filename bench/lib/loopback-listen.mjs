// Preloaded (`node --import`) into a peer that has no listen-address option (supergateway): a listen that names
// no host binds 127.0.0.1 instead of every interface, so the bench never exposes a port beyond loopback.
import net from "node:net";

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if (typeof args[0] === "number" && typeof args[1] !== "string") args.splice(1, 0, "127.0.0.1");
  else if (typeof args[0] === "object" && args[0] !== null && args[0].host === undefined && args[0].path === undefined)
    args[0] = { ...args[0], host: "127.0.0.1" };
  return listen.apply(this, args);
};
