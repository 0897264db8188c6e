import type { Redis } from 'ioredis';
import { defineScript, type RedisScript } from '../../store/redis.js';
import { rateDecision, WINDOW_MS, windowKey, type RateDecision } from './rate-limit.js';
import { ACQUIRE, ADMIT, CLEAR_INSTANCE, HELD, HOLD_KEYS, PURGE_EXPIRED, RELEASE, RELEASE_MANY, RENEW, SHRINK } from './hold-scripts.js';

/**
 * Wallet holds: while a call runs, its worst-case cost is reserved against the account's
 * balance and the key's budget, so concurrent calls can never together spend more than
 * either. A hold is taken *before* the balance is read (admission.ts), and a settled call's
 * hold (lowered to its cost) is released only once its charge is in the ledger
 * (settlement.ts): any hold released before ours was counted has already charged the
 * ledger, so the balance read afterwards reflects it, and the check only errs on the safe side.
 */

export interface HoldRef {
  id: string;
  accountId: string;
  keyId: string;
  amountMicros: number;
  /** Set when the call was counted against its key's tokens per minute (at its bound); settlement counts the real figure. */
  countedTokens?: number;
  /** Set when the call's key has a budget or its account a spend limit: the alerts watch its charge. */
  watched?: boolean;
}

export interface HoldChange {
  hold: HoldRef;
  amountMicros: number;
}

export interface HoldTotals {
  /** Sum of open holds on the account, this one included. */
  accountHeldMicros: number;
  /** Sum of open holds on the key, this one included. */
  keyHeldMicros: number;
}

export interface HoldStore {
  acquire(hold: HoldRef): Promise<HoldTotals>;
  release(hold: HoldRef): Promise<void>;
  /** Releases several holds at once (one round trip with Redis). */
  releaseAll(holds: readonly HoldRef[]): Promise<void>;
  /**
   * Lowers open holds to what their calls were charged, while the charges are on their way to
   * the ledger (each `amountMicros` at most its hold's). A hold already released stays released.
   */
  shrink(changes: readonly HoldChange[]): Promise<void>;
  /** Totals without taking a hold (for 402 messages). */
  held(accountId: string, keyId: string): Promise<HoldTotals>;
  /** µINR this daemon holds now, over every account (the metrics' gauge). */
  heldHere(): number;
  /**
   * Releases this daemon has issued so far. A release is sent after its call's charge is in
   * the ledger, so an admission whose hold totals were read before a release and its balance
   * after may count that call twice (its hold and its charge): refused that way, it tries once
   * more (admission.ts). Sent on one connection, a later acquire's totals never include it.
   */
  readonly releases: number;
  close(): void;
}

/** In process: nothing survives a restart, so no hold outlives its call. */
export class MemoryHoldStore implements HoldStore {
  private readonly byAccount = new Map<string, number>();
  private readonly byKey = new Map<string, number>();
  private readonly open = new Set<string>();
  releases = 0;

  async acquire(hold: HoldRef): Promise<HoldTotals> {
    if (!this.open.has(hold.id)) {
      this.open.add(hold.id);
      add(this.byAccount, hold.accountId, hold.amountMicros);
      add(this.byKey, hold.keyId, hold.amountMicros);
    }
    return this.heldSync(hold.accountId, hold.keyId);
  }

  async release(hold: HoldRef): Promise<void> {
    this.releaseSync(hold);
  }

  /** Synchronous under the promise: the totals are lower as soon as this is called. */
  async releaseAll(holds: readonly HoldRef[]): Promise<void> {
    for (const hold of holds) this.releaseSync(hold);
  }

  private releaseSync(hold: HoldRef): void {
    if (!this.open.delete(hold.id)) return;
    this.releases += 1;
    add(this.byAccount, hold.accountId, -hold.amountMicros);
    add(this.byKey, hold.keyId, -hold.amountMicros);
  }

  async shrink(changes: readonly HoldChange[]): Promise<void> {
    for (const { hold, amountMicros } of changes) {
      if (!this.open.has(hold.id) || amountMicros >= hold.amountMicros) continue;
      const delta = amountMicros - hold.amountMicros;
      add(this.byAccount, hold.accountId, delta);
      add(this.byKey, hold.keyId, delta);
      hold.amountMicros = amountMicros;
    }
  }

  async held(accountId: string, keyId: string): Promise<HoldTotals> {
    return this.heldSync(accountId, keyId);
  }

  heldSync(accountId: string, keyId: string): HoldTotals {
    return { accountHeldMicros: this.byAccount.get(accountId) ?? 0, keyHeldMicros: this.byKey.get(keyId) ?? 0 };
  }

  heldHere(): number {
    let total = 0;
    for (const amount of this.byAccount.values()) total += amount;
    return total;
  }

  close(): void {}
}

function add(map: Map<string, number>, id: string, delta: number): void {
  const next = (map.get(id) ?? 0) + delta;
  if (next === 0) map.delete(id);
  else map.set(id, next);
}

/** How long a hold outlives a daemon that stopped renewing it (redis.hold_lease). */
export const DEFAULT_LEASE_MS = 180_000;
const PURGE_EVERY_MS = 5_000;
/** How long lowered holds wait to share one SHRINK script. */
const SHRINK_COALESCE_MS = 5;

/**
 * Shared through Redis, one atomic script per operation. Leases bound how long a crashed
 * daemon's holds linger; at start a daemon also drops the holds its previous run left.
 */
export class RedisHoldStore implements HoldStore {
  /** This daemon's open holds, by id (their lease members are built from them). */
  private readonly mine = new Map<string, HoldRef>();
  releases = 0;
  /** Holds lowered but not yet sent (account key, key key, hold id, amount; repeated). */
  private shrinkArgs: (string | number)[] = [];
  private shrinkSent: Promise<void> | undefined;
  private readonly timer: NodeJS.Timeout;
  private readonly purgeTimer: NodeJS.Timeout;
  private readonly leases: string;
  private readonly scripts: Record<'admit' | 'acquire' | 'release' | 'releaseMany' | 'shrink' | 'held' | 'purge' | 'renew' | 'clear', RedisScript>;

  /** A third of the lease: a lease survives two missed renewals. */
  private readonly renewEveryMs: number;

  constructor(
    redis: Redis,
    private readonly prefix: string,
    private readonly instance: string,
    private readonly leaseMs = DEFAULT_LEASE_MS,
  ) {
    this.renewEveryMs = Math.max(1000, Math.floor(leaseMs / 3));
    this.leases = `${prefix}${HOLD_KEYS}leases`;
    this.scripts = {
      admit: defineScript(redis, 'gatewayAdmit', 4, ADMIT),
      acquire: defineScript(redis, 'gatewayHoldAcquire', 3, ACQUIRE),
      release: defineScript(redis, 'gatewayHoldRelease', 3, RELEASE),
      releaseMany: defineScript(redis, 'gatewayHoldReleaseMany', 1, RELEASE_MANY),
      shrink: defineScript(redis, 'gatewayHoldShrink', 0, SHRINK),
      held: defineScript(redis, 'gatewayHoldHeld', 3, HELD),
      purge: defineScript(redis, 'gatewayHoldPurge', 1, PURGE_EXPIRED),
      renew: defineScript(redis, 'gatewayHoldRenew', 1, RENEW),
      clear: defineScript(redis, 'gatewayHoldClear', 1, CLEAR_INSTANCE),
    };
    this.timer = setInterval(() => void this.renew(), this.renewEveryMs);
    this.timer.unref();
    this.purgeTimer = setInterval(() => void this.purgeExpired(), Math.min(PURGE_EVERY_MS, this.renewEveryMs));
    this.purgeTimer.unref();
  }

  /** Removes holds left by this instance's previous run. Returns how many. */
  async clearStale(): Promise<number> {
    return Number(await this.scripts.clear(this.leases, this.prefix, this.instance));
  }

  async acquire(hold: HoldRef): Promise<HoldTotals> {
    const member = this.leaseMember(hold);
    this.mine.set(hold.id, hold);
    const reply = (await this.scripts.acquire(...this.keys(hold.accountId, hold.keyId), hold.id, hold.amountMicros, member, this.leaseMs)) as number[];
    return { accountHeldMicros: Number(reply[0]), keyHeldMicros: Number(reply[1]) };
  }

  /**
   * The key's rate limit (the same window as RedisRateLimiter's) and, when the call is
   * admitted, its hold: one script, one round trip. No hold when the rate limit refuses.
   */
  async acquireIfAdmitted(keyId: string, limit: number, requestId: string, hold: HoldRef): Promise<{ rate: RateDecision; totals?: HoldTotals }> {
    const member = this.leaseMember(hold);
    const [account, key, leases] = this.keys(hold.accountId, hold.keyId);
    this.mine.set(hold.id, hold);
    let reply: unknown[];
    try {
      reply = (await this.scripts.admit(windowKey(this.prefix, keyId), account, key, leases, limit, WINDOW_MS, requestId, hold.id, hold.amountMicros, member, this.leaseMs)) as unknown[];
    } catch (error) {
      this.mine.delete(hold.id);
      throw error;
    }
    const rate = rateDecision(limit, reply);
    if (!rate.allowed) {
      this.mine.delete(hold.id);
      return { rate };
    }
    return { rate, totals: { accountHeldMicros: Number(reply[4]), keyHeldMicros: Number(reply[5]) } };
  }

  async release(hold: HoldRef): Promise<void> {
    if (!this.mine.delete(hold.id)) return;
    this.releases += 1;
    await this.scripts.release(...this.keys(hold.accountId, hold.keyId), hold.id, this.leaseMember(hold));
  }

  async releaseAll(holds: readonly HoldRef[]): Promise<void> {
    const args: string[] = [];
    for (const hold of holds) {
      if (!this.mine.delete(hold.id)) continue;
      const [account, key] = this.keys(hold.accountId, hold.keyId);
      args.push(account, key, hold.id, this.leaseMember(hold));
    }
    if (args.length === 0) return;
    this.releases += 1;
    await this.scripts.releaseMany(this.leases, ...args);
  }

  /**
   * Lowers holds, in one script for all the calls that settle within SHRINK_COALESCE_MS (at
   * a few hundred calls a second each call settles in a turn of its own, and a script per
   * call costs Redis and the daemon more than the rest of the call's Redis work). A shrink
   * that reaches Redis after its hold was released changes nothing (the script checks).
   */
  shrink(changes: readonly HoldChange[]): Promise<void> {
    const before = this.shrinkArgs.length;
    for (const { hold, amountMicros } of changes) {
      if (!this.mine.has(hold.id) || amountMicros >= hold.amountMicros) continue;
      const [account, key] = this.keys(hold.accountId, hold.keyId);
      this.shrinkArgs.push(account, key, hold.id, amountMicros);
      hold.amountMicros = amountMicros;
    }
    if (this.shrinkArgs.length === before) return this.shrinkSent ?? Promise.resolve();
    this.shrinkSent ??= new Promise<void>((resolve, reject) => {
      setTimeout(() => {
        const args = this.shrinkArgs;
        this.shrinkArgs = [];
        this.shrinkSent = undefined;
        this.scripts.shrink(...args).then(() => resolve(), reject);
      }, SHRINK_COALESCE_MS).unref();
    });
    return this.shrinkSent;
  }

  async held(accountId: string, keyId: string): Promise<HoldTotals> {
    const reply = (await this.scripts.held(...this.keys(accountId, keyId), this.prefix)) as number[];
    return { accountHeldMicros: Number(reply[0]), keyHeldMicros: Number(reply[1]) };
  }

  heldHere(): number {
    let total = 0;
    for (const hold of this.mine.values()) total += hold.amountMicros;
    return total;
  }

  close(): void {
    clearInterval(this.timer);
    clearInterval(this.purgeTimer);
  }

  /** Drops the holds whose leases ran out (their daemons stopped without releasing them). */
  async purgeExpired(): Promise<void> {
    try {
      await this.scripts.purge(this.leases, this.prefix);
    } catch {
      // Redis unreachable: the next tick tries again; HELD purges before it reads.
    }
  }

  /** The lease's member: "instance|account|key|hold" (PURGE and CLEAR_INSTANCE parse it). */
  private leaseMember(hold: HoldRef): string {
    return `${this.instance}|${hold.accountId}|${hold.keyId}|${hold.id}`;
  }

  private keys(accountId: string, keyId: string): [string, string, string] {
    return [`${this.prefix}${HOLD_KEYS}acct:${accountId}`, `${this.prefix}${HOLD_KEYS}key:${keyId}`, this.leases];
  }

  private async renew(): Promise<void> {
    if (this.mine.size === 0) return;
    try {
      await this.scripts.renew(this.leases, this.leaseMs, ...[...this.mine.values()].map((hold) => this.leaseMember(hold)));
    } catch {
      // Redis unreachable: the next renewal tries again; leases are three renewals long.
    }
  }
}
