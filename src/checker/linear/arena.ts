/**
 * The memory of one linear check (docs/scale.md §4): its typed arrays carved from a few large ArrayBuffers.
 *
 * V8 starts a full mark of the heap each time ArrayBuffer memory has grown by 64 MB since the last one (GC reason
 * "external memory pressure"). On a history of a million transactions the linear check takes about 500 MB of typed
 * arrays while the history and the model hold 2.4 GB of heap: allocated one by one, they cost five full marks of
 * 3-4 s each, two thirds of the check. Carved from chunks, each as large as all the chunks before it (at most 1 GiB,
 * unless one array needs more), they cost one mark per chunk, and the first, sized from the model, usually holds
 * everything. Offsets are aligned in double arithmetic (align8): a chunk may be larger than 2^31 bytes.
 *
 * The tail of a chunk that is never carved costs address space only (the pages of a fresh ArrayBuffer are not
 * touched until written). Nothing is freed before the whole arena is: an array that outlives the check is copied
 * out (`slice`), so that the check's chunks go with it.
 */
export class Arena {
  #chunk: ArrayBuffer | undefined;
  #used = 0;
  /** Bytes in all chunks so far. */
  #size = 0;
  readonly #reused = new Map<string, Int32Array>();

  /** `firstChunk`: bytes of the first chunk (more are added as needed, each at most `maxChunk` bytes). */
  constructor(
    private readonly firstChunk: number,
    private readonly maxChunk = MAX_CHUNK,
  ) {}

  int32(length: number): Int32Array {
    return new Int32Array(this.#take(length * 4), this.#used - length * 4, length);
  }

  uint8(length: number): Uint8Array {
    return new Uint8Array(this.#take(length), this.#used - length, length);
  }

  float64(length: number): Float64Array {
    return new Float64Array(this.#take(length * 8), this.#used - length * 8, length);
  }

  /** An Int32Array of `length` elements, each `value`. */
  int32Filled(length: number, value: number): Int32Array {
    const a = this.int32(length);
    if (value !== 0) a.fill(value);
    return a;
  }

  /** A copy of `source` (of a prefix, given as a subarray). */
  int32Copy(source: Int32Array): Int32Array {
    const a = this.int32(source.length);
    a.set(source);
    return a;
  }

  /** A copy of `a` in a new array twice as long (the growth of a list), its second half zero. */
  doubled<T extends Int32Array | Uint8Array>(a: T): T {
    const b = (a instanceof Int32Array ? this.int32(a.length * 2) : this.uint8(a.length * 2)) as T;
    b.set(a);
    return b;
  }

  /**
   * An Int32Array of `length` elements, each `value`, that every call with the same `slot` gets (filled again)
   * while the length is the same: scratch space a check needs once per repair round, kept once instead of once
   * per round. The array of a slot must be dead when the slot is asked for again.
   */
  reused(slot: string, length: number, value = 0): Int32Array {
    const kept = this.#reused.get(slot);
    if (kept !== undefined && kept.length === length) return kept.fill(value);
    const a = this.int32Filled(length, value);
    this.#reused.set(slot, a);
    return a;
  }

  /** Bytes of the chunks taken so far (for tests and the benchmark's profile). */
  get size(): number {
    return this.#size;
  }

  /** Returns the chunk `bytes` were carved from, the carve ending at `#used`. */
  #take(bytes: number): ArrayBuffer {
    const at = align8(this.#used); // every carve 8-byte aligned, for Float64Array
    if (this.#chunk === undefined || at + bytes > this.#chunk.byteLength) {
      // at most maxChunk, unless one array needs more (it then has a chunk of its own)
      const size = Math.max(bytes, Math.min(this.maxChunk, this.#size === 0 ? this.firstChunk : this.#size));
      this.#chunk = new ArrayBuffer(size);
      this.#size += size;
      this.#used = bytes;
      return this.#chunk;
    }
    this.#used = at + bytes;
    return this.#chunk;
  }
}

/** Chunks are at most 1 GiB (a larger array has a chunk of its own). */
const MAX_CHUNK = 2 ** 30;

/** n rounded up to a multiple of 8, in double arithmetic: `(n + 7) & ~7` wraps past 2^31. */
export function align8(n: number): number {
  return Math.ceil(n / 8) * 8;
}
