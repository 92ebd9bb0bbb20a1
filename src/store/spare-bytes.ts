// The memory store's answer bytes, recycled: the bytes of a task that left the
// store (evicted, expired, or replaced by its next version) go to the next task
// of about their size, instead of back to V8 and malloc.
//
// Why: a Buffer's bytes are freed only when V8 collects the Buffer object, and an
// evicted entry is old, so only a full GC frees it. Under a full budget every
// create evicts a finished task, and the dead Buffers pile up in malloc until V8
// counts enough external memory to collect them; glibc then keeps the freed
// chunks resident in the middle of its heap. 100,000 finished 1 KB tasks under a
// 64 MiB budget left 102 MiB resident in the brk heap for 57 MiB of live bytes
// (bench/RESULTS.md, "Finished tasks: RSS"). Recycled, the same chunks serve the
// next tasks at once.
//
// Safe because nothing outside the store keeps an entry's bytes: get() decodes
// them at once and getBytesNow's one caller copies them into its answer before
// it returns (TaskStore.getBytesNow says so).

/** At most this many spare bytes wait for a taker, so a burst of large results is not held for long. */
const SPARE_MAX_BYTES = 256 * 1024;

/** At most this many spares, so a take looks through a short list. */
const SPARE_MAX_COUNT = 64;

/** A spare is used for bytes at most this much shorter: unused room in a buffer is memory no budget charges. */
const SLACK_BYTES = 64;

export class SpareBytes {
  /** Spare backing stores, the most recently given last. */
  private readonly spares: ArrayBuffer[] = [];
  private spareBytes = 0;

  /** `text` as UTF-8 bytes, in a spare of about its size if there is one, else in an allocation of its own. */
  take(text: string): Buffer {
    const length = Buffer.byteLength(text);
    for (let i = this.spares.length - 1; i >= 0; i--) {
      const spare = this.spares[i] as ArrayBuffer;
      if (spare.byteLength < length || spare.byteLength > length + SLACK_BYTES) continue;
      this.spares.splice(i, 1);
      this.spareBytes -= spare.byteLength;
      const bytes = Buffer.from(spare, 0, length);
      bytes.write(text, "utf8");
      return bytes;
    }
    // One allocation of its own: a slice of Buffer's shared pool would keep the whole 8 KiB slab alive.
    const bytes = Buffer.allocUnsafeSlow(length);
    bytes.write(text, "utf8");
    return bytes;
  }

  /** Bytes from take() that nothing uses any more; kept for a later take while there is room. */
  give(bytes: Buffer): void {
    const spare = bytes.buffer;
    if (!(spare instanceof ArrayBuffer) || this.spareBytes + spare.byteLength > SPARE_MAX_BYTES) return;
    if (this.spares.length === SPARE_MAX_COUNT) this.spareBytes -= (this.spares.shift() as ArrayBuffer).byteLength;
    this.spares.push(spare);
    this.spareBytes += spare.byteLength;
  }

  /** Lets every spare go. */
  clear(): void {
    this.spares.length = 0;
    this.spareBytes = 0;
  }
}
