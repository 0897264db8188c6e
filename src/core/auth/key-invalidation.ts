import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { KeyKind } from '../keys.js';
import type { KeyAuthenticator } from './key-auth.js';

/**
 * Key changes seen by every daemon at once. Each daemon caches key records for a few seconds
 * (key-auth.ts); when one daemon revokes, updates or expires a key it publishes the key's
 * hash on Redis, and every daemon (itself included) drops that record, so the next request
 * with the key reads it again. A revoked key is refused by every daemon within the pub/sub
 * delivery (milliseconds); if Redis is unreachable, within the cache lifetime (5 s) still.
 */
export class KeyInvalidations {
  private readonly channel: string;
  private subscriber: Redis | undefined;

  constructor(
    private readonly redis: Redis,
    prefix: string,
    private readonly authenticators: Record<KeyKind, KeyAuthenticator>,
    private readonly logger: Logger,
  ) {
    this.channel = `${prefix}keys:invalidate`;
    for (const kind of ['api', 'management'] as const) authenticators[kind].onInvalidate = (hash) => this.publish(kind, hash);
  }

  /** Subscribes on a connection of its own (a subscribed connection takes no other command). */
  async start(): Promise<void> {
    const subscriber = this.redis.duplicate({ lazyConnect: true });
    this.subscriber = subscriber;
    subscriber.on('error', () => undefined); // the main connection reports Redis errors
    subscriber.on('message', (channel: string, message: string) => {
      if (channel !== this.channel) return;
      const [kind, hash] = message.split(':');
      if ((kind === 'api' || kind === 'management') && hash) this.authenticators[kind].forget(hash);
    });
    try {
      // At most 3 s at start (as the main connection); ioredis keeps trying afterwards.
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error('Redis did not answer within 3 s')), 3000);
        timer.unref();
      });
      try {
        await Promise.race([subscriber.connect().then(() => subscriber.subscribe(this.channel)), timeout]);
      } finally {
        clearTimeout(timer);
      }
    } catch (error) {
      // ioredis reconnects and subscribes again (autoResubscribe) once Redis answers.
      this.logger.warn({ err: { message: (error as Error).message } }, 'could not subscribe to key changes yet; other daemons see them within the key cache lifetime');
    }
  }

  close(): void {
    this.subscriber?.disconnect();
  }

  private publish(kind: KeyKind, hash: string): void {
    this.redis.publish(this.channel, `${kind}:${hash}`).catch((error: unknown) => this.logger.warn({ err: { message: (error as Error).message } }, 'could not publish a key change; other daemons see it within the key cache lifetime'));
  }
}
