/**
 * The partitions of the semantic cache's vector index (vector-worker.ts): a flat array searched
 * exhaustively while small, an HNSW graph (hnswlib) past `flatLimit` entries.
 */
import hnswlib from 'hnswlib-node';

const { HierarchicalNSW } = hnswlib;
type Hnsw = InstanceType<typeof HierarchicalNSW>;

export interface VectorTuning {
  /** HNSW graph degree. */
  m: number;
  /** Candidate list size while inserting (build quality against insert cost). */
  efConstruction: number;
  /** Candidate list size while searching (recall against search cost). */
  ef: number;
  /** A partition becomes an HNSW index when it reaches this many entries (0: at once). */
  flatLimit: number;
}

export interface VectorMatch {
  id: number;
  similarity: number;
}

/** hnswlib takes labels as uint32. */
const MAX_LABEL = 0xffff_ffff;

/** One partition's entries: add, remove and search by cosine similarity. */
export interface Partition {
  readonly dim: number;
  readonly size: number;
  /** Adds or replaces `id` (`vector` is unit length and `dim` long). */
  add(id: number, vector: Float32Array): void;
  /** Removes `id` (known to be here). */
  remove(id: number): void;
  search(query: Float32Array, minSimilarity: number): VectorMatch | undefined;
  /** The ids held. */
  keys(): Iterable<number>;
  entries(): Iterable<[number, Float32Array]>;
  /** Frees what can be freed now (hnswlib's memory otherwise waits for garbage collection). */
  dispose(): void;
}

/** An exhaustive scan over a packed array: exact, and no per-partition overhead. */
export class FlatPartition implements Partition {
  private data: Float32Array;
  private ids: number[] = [];
  private readonly slots = new Map<number, number>();

  constructor(readonly dim: number, capacity = 8) {
    this.data = new Float32Array(capacity * dim);
  }

  get size(): number {
    return this.ids.length;
  }

  add(id: number, vector: Float32Array): void {
    const existing = this.slots.get(id);
    if (existing !== undefined) {
      this.data.set(vector, existing * this.dim);
      return;
    }
    const slot = this.ids.length;
    if ((slot + 1) * this.dim > this.data.length) {
      const grown = new Float32Array(this.data.length * 2);
      grown.set(this.data);
      this.data = grown;
    }
    this.data.set(vector, slot * this.dim);
    this.ids.push(id);
    this.slots.set(id, slot);
  }

  remove(id: number): void {
    const slot = this.slots.get(id);
    if (slot === undefined) return;
    // The last entry moves into the hole, so the array stays packed.
    const last = this.ids.length - 1;
    const lastId = this.ids.pop() as number;
    this.slots.delete(id);
    if (slot !== last) {
      this.data.copyWithin(slot * this.dim, last * this.dim, (last + 1) * this.dim);
      this.ids[slot] = lastId;
      this.slots.set(lastId, slot);
    }
  }

  search(query: Float32Array, minSimilarity: number): VectorMatch | undefined {
    const { data, dim, ids } = this;
    let best = -Infinity;
    let bestSlot = -1;
    for (let slot = 0, offset = 0; slot < ids.length; slot++, offset += dim) {
      let dot = 0;
      for (let i = 0; i < dim; i++) dot += (data[offset + i] as number) * (query[i] as number);
      if (dot > best) {
        best = dot;
        bestSlot = slot;
      }
    }
    if (bestSlot < 0 || best < minSimilarity) return undefined;
    return { id: ids[bestSlot] as number, similarity: best };
  }

  keys(): Iterable<number> {
    return this.slots.keys();
  }

  *entries(): Iterable<[number, Float32Array]> {
    for (let slot = 0; slot < this.ids.length; slot++) {
      yield [this.ids[slot] as number, this.data.subarray(slot * this.dim, (slot + 1) * this.dim)];
    }
  }

  dispose(): void {
    this.data = new Float32Array(0);
    this.ids = [];
    this.slots.clear();
  }
}

/**
 * An HNSW graph in the cosine space (similarity = 1 − distance). Every insert gets a fresh label
 * and removal only marks it deleted; a later insert takes over a deleted slot
 * (allowReplaceDeleted), so churn does not grow the index. Labels are never reused because
 * hnswlib's slot replacement loses track of a label that is in the index twice.
 */
export class HnswPartition implements Partition {
  private readonly index: Hnsw;
  private readonly labels = new Map<number, number>(); // id → label
  private readonly ids = new Map<number, number>(); // label → id
  private nextLabel = 0;

  constructor(readonly dim: number, capacity: number, tuning: VectorTuning) {
    this.index = new HierarchicalNSW('cosine', dim);
    this.index.initIndex({ maxElements: Math.max(capacity, 16), m: tuning.m, efConstruction: tuning.efConstruction, allowReplaceDeleted: true });
    this.index.setEf(tuning.ef);
  }

  get size(): number {
    return this.labels.size;
  }

  /** True when the labels are used up (after 4 billion inserts): the caller rebuilds the partition. */
  get full(): boolean {
    return this.nextLabel > MAX_LABEL;
  }

  add(id: number, vector: Float32Array): void {
    if (this.labels.has(id)) this.remove(id);
    // Slots used so far, deleted ones included; a deleted one is reused before the index grows.
    const used = this.index.getCurrentCount();
    if (used === this.labels.size && used >= this.index.getMaxElements()) this.index.resizeIndex(used * 2);
    const label = this.nextLabel++;
    this.index.addPoint(Array.from(vector), label, true);
    this.labels.set(id, label);
    this.ids.set(label, id);
  }

  remove(id: number): void {
    const label = this.labels.get(id);
    if (label === undefined) return;
    this.index.markDelete(label);
    this.labels.delete(id);
    this.ids.delete(label);
  }

  search(query: Float32Array, minSimilarity: number): VectorMatch | undefined {
    if (this.labels.size === 0) return undefined;
    const { neighbors, distances } = this.index.searchKnn(Array.from(query), 1);
    const label = neighbors[0];
    const distance = distances[0];
    if (label === undefined || distance === undefined) return undefined;
    const id = this.ids.get(label);
    const similarity = 1 - distance;
    if (id === undefined || similarity < minSimilarity) return undefined;
    return { id, similarity };
  }

  keys(): Iterable<number> {
    return this.labels.keys();
  }

  *entries(): Iterable<[number, Float32Array]> {
    for (const [id, label] of this.labels) yield [id, Float32Array.from(this.index.getPoint(label))];
  }

  dispose(): void {
    // The native index is freed when the object is garbage-collected, and V8 does not know how
    // big it is. A big one is swapped for a tiny one now (≈2 ms: a new index costs that much).
    if (this.index.getMaxElements() > 4096) this.index.initIndex({ maxElements: 1, m: 2, efConstruction: 2 });
    this.labels.clear();
    this.ids.clear();
  }
}

/** Scales to unit length in place (a zero vector stays zero), as hnswlib's cosine space does. */
export function normalize(vector: Float32Array): Float32Array {
  let sum = 0;
  for (let i = 0; i < vector.length; i++) sum += (vector[i] as number) ** 2;
  const scale = 1 / (Math.sqrt(sum) + 1e-30);
  for (let i = 0; i < vector.length; i++) vector[i] = (vector[i] as number) * scale;
  return vector;
}
