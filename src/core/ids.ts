import { randomFillSync } from 'node:crypto';

/**
 * Request ids: `req_` + a UUIDv7 (RFC 9562) as 32 lowercase hex digits. Version 7 starts with
 * the Unix time in milliseconds, and the 12 bits after the version count up within one
 * millisecond (the RFC's "fixed-length dedicated counter"), so the ids one process makes are
 * strictly increasing. That matters for the store: the ledger's and the usage table's unique
 * indexes on the request id then grow at their right edge, as the rowid does, instead of
 * taking each insert at a random leaf (which cost twice the CPU per settlement and dirtied
 * one more page per call in each index). The remaining 62 bits are random, so ids from
 * several daemons do not collide.
 */

const POOL_IDS = 512;
const pool = Buffer.allocUnsafe(8 * POOL_IDS);
let poolAt = POOL_IDS;

let lastMs = -1;
/** `req_` + the 12 hex digits of lastMs. */
let prefix = '';
let counter = 0;

export function newRequestId(now = Date.now()): string {
  if (now > lastMs) {
    lastMs = now;
    counter = 0;
    prefix = 'req_' + now.toString(16).padStart(12, '0');
  } else if (++counter > 0xfff) {
    // 4,096 ids in one millisecond: borrow the next millisecond, keeping the order.
    lastMs += 1;
    counter = 0;
    prefix = 'req_' + lastMs.toString(16).padStart(12, '0');
  }
  if (poolAt === POOL_IDS) {
    randomFillSync(pool);
    // The variant bits (10) of every id in the pool, set once.
    for (let at = 0; at < pool.length; at += 8) pool[at] = ((pool[at] as number) & 0x3f) | 0x80;
    poolAt = 0;
  }
  const at = 8 * poolAt++;
  // Version 7 and the 12-bit counter, then variant 10 and 62 random bits.
  return prefix + (0x7000 | counter).toString(16) + pool.toString('hex', at, at + 8);
}

/** A request id without its `req_` prefix, for the ids of the response objects (`chatcmpl-…`, `msg_…`, `resp_…`). */
export function requestIdBody(requestId: string): string {
  return requestId.startsWith('req_') ? requestId.slice(4) : requestId;
}
