import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { UsageRecord } from '../../store/usage.js';
import type { UsageService } from './usage.js';
import { subscribe } from '../../store/redis.js';

/**
 * The live usage feed across daemons. Each daemon publishes the rows it applied to the ledger
 * (one Redis PUBLISH per settlement batch, not per call) and shows the other daemons' rows to
 * its own listeners (`/api/management/usage/stream`, `gateway usage tail`, the dashboard), so
 * a feed opened on any daemon shows every daemon's calls. Rows arrive after their batch is
 * committed, as local ones do. If Redis is unreachable, each feed shows its own daemon's calls.
 */
export class UsageRelay {
  private readonly channel: string;
  private readonly origin = randomUUID();
  private subscriber: Redis | undefined;
  private queued: UsageRecord[] = [];
  private scheduled = false;

  constructor(
    private readonly redis: Redis,
    prefix: string,
    private readonly usage: UsageService,
    private readonly logger: Logger,
  ) {
    this.channel = `${prefix}usage:feed`;
    usage.onPublish = (record) => this.queue(record);
  }

  async start(): Promise<void> {
    const { subscriber, subscribed } = await subscribe(this.redis, this.channel, (message) => {
      // Parsed only when someone here is watching.
      if (this.usage.subscribers === 0) return;
      let batch: { from?: unknown; rows?: unknown };
      try {
        batch = JSON.parse(message) as { from?: unknown; rows?: unknown };
      } catch {
        return;
      }
      if (batch.from === this.origin || !Array.isArray(batch.rows)) return;
      for (const row of batch.rows as UsageRecord[]) this.usage.emit(row);
    });
    this.subscriber = subscriber;
    if (!subscribed) this.logger.warn("could not subscribe to the other daemons' usage yet; the live feed shows this daemon's calls meanwhile");
  }

  close(): void {
    this.flush();
    this.subscriber?.disconnect();
  }

  private queue(record: UsageRecord): void {
    this.queued.push(record);
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => this.flush());
  }

  private flush(): void {
    this.scheduled = false;
    if (this.queued.length === 0) return;
    const rows = this.queued;
    this.queued = [];
    this.redis.publish(this.channel, JSON.stringify({ from: this.origin, rows })).catch((error: unknown) => this.logger.debug({ err: { message: (error as Error).message } }, 'could not publish usage to the other daemons'));
  }
}
