import postgres from 'postgres';
import type { ChargeInput } from '../ledger.js';
import type { Funds } from '../types.js';

/** How often the listening session is checked; one check left unanswered a whole period turns the cache off. */
const CHECK_MS = 2000;
/** Waits between tries to listen again after the session was lost. */
const RELISTEN_MS = [100, 500, 1000, 2000];
/** Accounts (and keys) held at most before the cache starts over. */
const MAX_CACHED = 50_000;
/**
 * How long a wallet read is used at most. Notices cover every change but one no process
 * announces: another serving process's settlement batch (they mark themselves so that the
 * daemon's own send nothing), possible only in the seconds a daemon that lost the serving
 * lock takes to stop, or a commit that lands after its connection was cut. This bounds it.
 * Not shorter: under load a settlement batch is nearly always in flight, and a read that one
 * overlapped is not kept (`read`), so refilling can take many calls' reads (at 200 req/s on
 * PostgreSQL, 1 s made admission's read 1.85 ms on average, 10 s 0.20 ms, none 0.01 ms).
 */
const MAX_AGE_MS = 10_000;

/** Own writes to what admission reads, told to the funds cache around them. */
export interface FundsWrites {
  run<T>(write: () => Promise<T>): Promise<T>;
}

/** For repositories with no cache to tell (a transaction's, or a store that does not cache). */
export const UNTRACKED: FundsWrites = { run: (write) => write() };

type AccountFunds = { balanceMicros: number; account: Funds['account'] };
/** A key's funds (null: the key is not the account's), and when the read that brought it was asked for. */
type KeyEntry = { key: NonNullable<Funds['key']> | null; readAt: number };

/**
 * Admission's funds on PostgreSQL, remembered between calls, for a daemon that serves the
 * database alone (no Redis: the serving lock keeps every other daemon off it). A call then
 * reads its wallet and key from memory instead of a round trip (issue 32). The cache is right
 * as long as it hears of every change:
 * - this daemon's settlement batches are applied to it in place, before their holds are
 *   released (holds.ts: a released hold's charge is in what admission reads next);
 * - any other change, by this daemon (a spend limit, a budget, a top-up: `run`) or any other
 *   process (the CLI on another host), empties it: the first through `run`, as it happens,
 *   the second through a notice on gateway_funds, which triggers on `accounts` and `api_keys`
 *   send at its commit (migration 9). Until a notice arrives, a change made elsewhere is seen
 *   a moment late, as if it had been made a moment later; a refusal reads again first
 *   (admission.ts, `barrier`), so a top-up is never refused for that moment.
 * - A read is kept only when no own write overlapped it (`generation`), so it never undoes
 *   an update applied in place meanwhile, nor counts a batch twice.
 * - While its session is not listening (not yet, cut, or unanswered), the cache holds nothing
 *   and every call reads the database, as without it.
 * - A read is used for ten seconds at most (MAX_AGE_MS), which bounds what no notice announces.
 */
export class PgFundsCache implements FundsWrites {
  private readonly accounts = new Map<string, AccountFunds>();
  /** By account and key. */
  private readonly keys = new Map<string, KeyEntry>();
  /** Moves on every change the cache did not take in place; a read that saw it move is not kept. */
  private generation = 0;
  /** Own writes in flight. */
  private writing = 0;
  private listening = false;
  private closed = false;
  private client: postgres.Sql | undefined;
  private timer: NodeJS.Timeout | undefined;
  private checking = false;
  /** A loop taking the session back to listening is running (one at most). */
  private relistening = false;
  private pid = -1;
  /** Reads served from memory, and reads that went to the database (tests, diagnostics). */
  hits = 0;
  misses = 0;
  /** Sessions it has listened on (a new one after each cut). */
  sessions = 0;
  /** How long a read is used at most (tests lengthen it to watch in-place updates over many calls). */
  maxAgeMs = MAX_AGE_MS;

  /** Starts listening on `url` (a session of its own); the cache serves once it listens. */
  start(url: string): void {
    if (this.client || this.closed) return;
    // `onnotify` is the driver's (its own listen() uses it) though its types leave it out;
    // listen() itself is not used: it gives up without a word when listening again fails.
    const options: postgres.Options<Record<string, never>> & { onnotify: (channel: string, payload: string) => void } = {
      max: 1,
      connect_timeout: 5,
      idle_timeout: 0,
      max_lifetime: 0,
      fetch_types: false,
      onnotice: () => undefined,
      // A notice: another process changed a wallet or a key.
      onnotify: () => this.clear(),
      // The session is gone, and the notices it would have brought with it.
      onclose: () => this.lost(),
    };
    this.client = postgres(url, options);
    void this.relisten();
    this.timer = setInterval(() => void this.check(), CHECK_MS);
    this.timer.unref();
  }

  /** The funds of a call: from memory when the cache holds them, else `load`'s (kept when nothing moved meanwhile). */
  async read(accountId: string, apiKeyId: string, load: () => Promise<Funds | undefined>): Promise<Funds | undefined> {
    if (this.listening) {
      const cached = this.get(accountId, apiKeyId);
      if (cached) {
        this.hits++;
        return cached;
      }
    }
    this.misses++;
    const generation = this.generation;
    const clean = this.listening && this.writing === 0;
    const asked = performance.now();
    const funds = await load();
    if (funds && clean && this.listening && this.writing === 0 && this.generation === generation) this.set(accountId, apiKeyId, funds, asked);
    return funds;
  }

  /** An own write that changes what admission reads (not a settlement batch): the cache starts over. */
  async run<T>(write: () => Promise<T>): Promise<T> {
    this.began();
    try {
      return await write();
    } finally {
      this.ended();
      this.clear();
    }
  }

  /**
   * An own settlement batch: applied in place once committed; when it fails, the cache starts
   * over (a cut connection leaves it unknown whether the commit happened).
   */
  async settle<T>(charges: readonly ChargeInput[], commit: () => Promise<T>): Promise<T> {
    this.began();
    let committed = false;
    try {
      const result = await commit();
      committed = true;
      return result;
    } finally {
      this.ended();
      if (committed) this.charged(charges);
      else this.clear();
    }
  }

  /** Empties the cache (a refusal's second look, alerts' exact read); true when it held something. */
  drop(): boolean {
    const held = this.keys.size > 0;
    this.clear();
    return held;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.listening = false;
    this.clear();
    if (this.timer) clearInterval(this.timer);
    await this.client?.end({ timeout: 1 }).catch(() => undefined);
  }

  get isListening(): boolean {
    return this.listening;
  }

  private get(accountId: string, apiKeyId: string): Funds | undefined {
    const account = this.accounts.get(accountId);
    const entry = this.keys.get(`${accountId}\n${apiKeyId}`);
    // The account's figures are as old as the newest read of any of its keys, at most.
    if (account === undefined || entry === undefined || performance.now() - entry.readAt > this.maxAgeMs) return undefined;
    const key = entry.key;
    return { balanceMicros: account.balanceMicros, account: { ...account.account }, key: key === null ? undefined : { ...key } };
  }

  /** `readAt`: when the read was asked for (its age counts from there). */
  private set(accountId: string, apiKeyId: string, funds: Funds, readAt: number): void {
    if (this.keys.size >= MAX_CACHED) this.clear();
    this.accounts.set(accountId, { balanceMicros: funds.balanceMicros, account: { ...funds.account } });
    this.keys.set(`${accountId}\n${apiKeyId}`, { key: funds.key ? { ...funds.key } : null, readAt });
  }

  private charged(charges: readonly ChargeInput[]): void {
    for (const charge of charges) {
      const account = this.accounts.get(charge.accountId);
      if (account !== undefined) {
        account.balanceMicros -= charge.amountMicros;
        account.account.spentMicros += charge.amountMicros;
      }
      const key = charge.apiKeyId ? this.keys.get(`${charge.accountId}\n${charge.apiKeyId}`)?.key : undefined;
      if (key && charge.amountMicros > 0) key.spentMicros += charge.amountMicros;
    }
  }

  private began(): void {
    this.writing++;
    this.generation++;
  }

  private ended(): void {
    this.writing--;
    this.generation++;
  }

  private clear(): void {
    this.generation++;
    this.accounts.clear();
    this.keys.clear();
  }

  private lost(): void {
    this.listening = false;
    this.clear();
    void this.relisten();
  }

  /**
   * LISTEN on a (new) session, tried again until it is answered (the driver connects anew for
   * each try); the cache serves from that moment. One loop at most, however many cuts.
   */
  private async relisten(): Promise<void> {
    const client = this.client;
    if (!client || this.relistening) return;
    this.relistening = true;
    try {
      for (let attempt = 0; !this.closed; attempt++) {
        try {
          await client`LISTEN gateway_funds`;
          const [row] = await client<Array<{ pid: number }>>`SELECT pg_backend_pid() AS pid`;
          if (this.closed) return;
          this.pid = row?.pid ?? -1;
          this.clear();
          this.sessions++;
          this.listening = true;
          return;
        } catch {
          const wait = RELISTEN_MS[Math.min(attempt, RELISTEN_MS.length - 1)] as number;
          await new Promise((resolve) => setTimeout(resolve, wait).unref());
        }
      }
    } finally {
      this.relistening = false;
    }
  }

  /**
   * The session is still the one that listens: a check still unanswered from the last period
   * turns the cache off (a silent cut would bring no notice), and a new session listens again.
   */
  private async check(): Promise<void> {
    const client = this.client;
    if (!client || this.closed) return;
    if (this.checking) {
      this.listening = false;
      this.clear();
      return;
    }
    if (!this.listening) return;
    this.checking = true;
    try {
      const [row] = await client<Array<{ pid: number; listens: boolean }>>`SELECT pg_backend_pid() AS pid, 'gateway_funds' = ANY(pg_listening_channels()) AS listens`;
      if (row?.pid !== this.pid || !row.listens) {
        this.listening = false;
        this.clear();
        await this.relisten();
      } else if (!this.listening && !this.closed) {
        // Answered after all (a slow server): listening on the same session all along.
        this.clear();
        this.listening = true;
      }
    } catch {
      // The session is gone: onclose listens again.
    } finally {
      this.checking = false;
    }
  }
}
