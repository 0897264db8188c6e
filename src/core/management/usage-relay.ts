import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { UsageRecord } from '../../store/usage.js';
import type { UsageService } from './usage.js';

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
    const subscriber = this.redis.duplicate({ lazyConnect: true });
    this.subscriber = subscriber;
    subscriber.on('error', () => undefined); // the main connection reports Redis errors
    subscriber.on('message', (channel: string, message: string) => {
      // Parsed only when someone here is watching.
      if (channel !== this.channel || this.usage.subscribers === 0) return;
      let batch: { from?: unknown; rows?: unknown };
      try {
        batch = JSON.parse(message) as { from?: unknown; rows?: unknown };
      } catch {
        return;
      }
      if (batch.from === this.origin || !Array.isArray(batch.rows)) return;
      for (const row of batch.rows as UsageRecord[]) this.usage.emit(row);
    });
    let timer: NodeJS.Timeout | undefined;
    try {
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error('Redis did not answer within 3 s')), 3000);
        timer.unref();
      });
      await Promise.race([subscriber.connect().then(() => subscriber.subscribe(this.channel)), timeout]);
    } catch (error) {
      // ioredis reconnects and subscribes again once Redis answers.
      this.logger.warn({ err: { message: (error as Error).message } }, 'could not subscribe to the other daemons\' usage yet; the live feed shows this daemon\'s calls meanwhile');
    } finally {
      clearTimeout(timer);
    }
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
