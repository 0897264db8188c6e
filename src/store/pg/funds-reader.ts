import { FUNDS_COLUMNS, toFunds, type FundsRow } from '../funds.js';
import type { Funds } from '../types.js';
import { readRetrying, type PgSql } from './db.js';

/**
 * Batches in flight at once; reads asked for meanwhile wait for the next batch. One, as for
 * settlement's commits (ledger-writer.ts): fewer, larger batches cost PostgreSQL less per read,
 * and on a loaded host that is what the reads wait for.
 */
const MAX_IN_FLIGHT = 1;
/** Reads in one statement at most (a longer queue goes out in several). */
const MAX_BATCH = 256;

interface Pending {
  accountId: string;
  apiKeyId: string;
  resolve: (funds: Funds | undefined) => void;
  reject: (error: unknown) => void;
}

/**
 * Admission's funds reads on PostgreSQL, several calls' in one statement (issue 32). A read is
 * a round trip, and its cost is the round trip's, not the query's: at 50 connections the
 * daemon spent more in socket writes for these reads than in all the rest of a call. The
 * reads asked for in one turn of the event loop go out together, in one `unnest` join, as
 * soon as fewer than MAX_IN_FLIGHT batches are out; the ones asked for while that many are
 * out go in the next batch. Every read still starts after it was asked for, so it sees every
 * commit before it: at low load a batch holds one read and nothing waits; under load a read
 * waits at most for a batch to come back. (A daemon serving the database alone asks it only
 * for the wallets its funds cache does not hold: funds-cache.ts.)
 */
export class PgFundsReader {
  private queue: Pending[] = [];
  private inFlight = 0;
  private scheduled = false;

  constructor(private readonly sql: PgSql) {}

  read(accountId: string, apiKeyId: string): Promise<Funds | undefined> {
    return new Promise((resolve, reject) => {
      this.queue.push({ accountId, apiKeyId, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => {
          this.scheduled = false;
          this.flush();
        });
      }
    });
  }

  private flush(): void {
    while (this.queue.length > 0 && this.inFlight < MAX_IN_FLIGHT) {
      this.inFlight += 1;
      this.send(this.queue.splice(0, MAX_BATCH)).finally(() => {
        this.inFlight -= 1;
        this.flush();
      });
    }
  }

  private async send(batch: Pending[]): Promise<void> {
    // One row per distinct (account, key) pair; the pair's position in the arrays is its `i`.
    const index = new Map<string, number>();
    const accounts: string[] = [];
    const keys: string[] = [];
    const slots = batch.map((read) => {
      const pair = `${read.accountId}\n${read.apiKeyId}`;
      let slot = index.get(pair);
      if (slot === undefined) {
        slot = accounts.push(read.accountId);
        keys.push(read.apiKeyId);
        index.set(pair, slot);
      }
      return slot;
    });
    try {
      const rows = await readRetrying(() => this.sql<Array<FundsRow & { i: number }>>`
        SELECT q.i, ${this.sql.unsafe(FUNDS_COLUMNS)}
          FROM unnest(${accounts}::text[], ${keys}::text[]) WITH ORDINALITY AS q(account_id, key_id, i)
          JOIN accounts a ON a.id = q.account_id
          LEFT JOIN api_keys k ON k.id = q.key_id AND k.account_id = a.id`);
      const found = new Map<number, Funds>();
      for (const row of rows) found.set(row.i, toFunds(row));
      batch.forEach((read, n) => read.resolve(found.get(slots[n] as number)));
    } catch (error) {
      for (const read of batch) read.reject(error);
    }
  }
}
