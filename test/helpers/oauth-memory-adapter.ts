// Storage for one test authorization server (test/helpers/oauth-server.ts). oidc-provider's own
// development adapter keeps every provider of the process in one module-wide LRU of 1,000 entries,
// so a test that fetches many tokens could evict another server's clients; this one is a plain Map
// per server, with expiry, and never evicts. Scans are linear: a test server holds few entries.
import type { Adapter, AdapterFactory, AdapterPayload } from "oidc-provider";

interface Entry {
  payload: AdapterPayload;
  /** Epoch milliseconds; Infinity for entries stored without a lifetime (clients). */
  expiresAt: number;
}

export function memoryAdapter(): AdapterFactory {
  const store = new Map<string, Entry>();
  const live = (key: string, e: Entry | undefined): AdapterPayload | undefined => {
    if (e === undefined) return undefined;
    if (e.expiresAt > Date.now()) return e.payload;
    store.delete(key);
    return undefined;
  };
  return (model: string): Adapter => {
    const key = (id: string): string => `${model}:${id}`;
    const findBy = (match: (p: AdapterPayload) => boolean): AdapterPayload | undefined => {
      for (const [k, e] of store) if (k.startsWith(`${model}:`) && match(e.payload)) return live(k, e);
      return undefined;
    };
    return {
      upsert: async (id, payload, expiresIn) => {
        store.set(key(id), { payload, expiresAt: expiresIn ? Date.now() + expiresIn * 1000 : Infinity });
      },
      find: async (id) => live(key(id), store.get(key(id))),
      findByUid: async (uid) => findBy((p) => p.uid === uid),
      findByUserCode: async (userCode) => findBy((p) => p.userCode === userCode),
      consume: async (id) => {
        const payload = live(key(id), store.get(key(id)));
        if (payload) payload.consumed = Math.floor(Date.now() / 1000);
      },
      destroy: async (id) => {
        store.delete(key(id));
      },
      revokeByGrantId: async (grantId) => {
        for (const [k, e] of store) if (k.startsWith(`${model}:`) && e.payload.grantId === grantId) store.delete(k);
      },
    };
  };
}
