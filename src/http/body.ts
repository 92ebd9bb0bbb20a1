// Reads a client's request body with a hard byte limit, stopping as soon as the
// limit is passed so an oversized or endless body cannot grow memory.

export type BodyResult = { ok: true; body: Buffer } | { ok: false; reason: "too_large" | "aborted" };

export async function readLimitedBody(
  source: AsyncIterable<Uint8Array>,
  limit: number,
  declaredLength: string | undefined,
): Promise<BodyResult> {
  if (declaredLength !== undefined) {
    const n = Number(declaredLength);
    if (Number.isFinite(n) && n > limit) return { ok: false, reason: "too_large" };
  }
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of source) {
      size += chunk.byteLength;
      if (size > limit) return { ok: false, reason: "too_large" };
      chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
    }
  } catch {
    return { ok: false, reason: "aborted" };
  }
  return { ok: true, body: chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size) };
}
