/** The fuzzer's seeded PRNG (sfc32) and its seed (FUZZ_SEED). */

/** sfc32: small, fast, and the same sequence for the same seed on every platform. */
export class Rng {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  constructor(seed: number) {
    this.a = 0x9e3779b9;
    this.b = 0x243f6a88;
    this.c = 0xb7e15162;
    this.d = seed >>> 0;
    for (let i = 0; i < 16; i++) this.next();
  }

  /** A uniform 32-bit unsigned integer. */
  next(): number {
    this.a >>>= 0;
    this.b >>>= 0;
    this.c >>>= 0;
    this.d >>>= 0;
    let t = (this.a + this.b) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.d = (this.d + 1) | 0;
    t = (t + this.d) | 0;
    this.c = (this.c + t) | 0;
    return t >>> 0;
  }

  /** An integer in [0, n). */
  int(n: number): number {
    return Math.floor((this.next() / 0x1_0000_0000) * n);
  }

  chance(p: number): boolean {
    return this.next() / 0x1_0000_0000 < p;
  }

  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)] as T;
  }

  /** `count` distinct-ish picks (with repetition allowed). */
  some<T>(items: readonly T[], count: number): T[] {
    return Array.from({ length: count }, () => this.pick(items));
  }

  bytes(n: number): Buffer {
    const out = Buffer.alloc(n);
    for (let i = 0; i < n; i++) out[i] = this.next() & 0xff;
    return out;
  }

  /** A random printable-ish string (never the simulator's `SIM:` marker: no colon). */
  word(max = 12): string {
    const alphabet = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./ @%é漢😀';
    const chars = Array.from(alphabet);
    let out = '';
    const length = 1 + this.int(max);
    for (let i = 0; i < length; i++) out += this.pick(chars);
    return out;
  }

  shuffle<T>(items: T[]): T[] {
    for (let i = items.length - 1; i > 0; i--) {
      const j = this.int(i + 1);
      [items[i], items[j]] = [items[j] as T, items[i] as T];
    }
    return items;
  }
}

/** The seed: FUZZ_SEED (decimal or 0x hex; `random` for a fresh one), else a fixed default. */
function fuzzSeed(env: NodeJS.ProcessEnv = process.env): number {
  const text = env.FUZZ_SEED;
  if (text === undefined || text === '') return 0x5eed_2028;
  if (text === 'random') return (Math.random() * 0x1_0000_0000) >>> 0;
  const value = Number(text);
  if (!Number.isFinite(value)) throw new Error(`FUZZ_SEED must be a number or "random" (got ${text})`);
  return value >>> 0;
}

/** The run's seed (FUZZ_SEED). */
export const SEED = fuzzSeed();
