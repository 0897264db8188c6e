import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { KeyKind } from '../keys.js';
import type { KeyAuthenticator } from './key-auth.js';
import { subscribe } from '../../store/redis.js';

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

  async start(): Promise<void> {
    const { subscriber, subscribed } = await subscribe(this.redis, this.channel, (message) => {
      const [kind, hash] = message.split(':');
      if ((kind === 'api' || kind === 'management') && hash) this.authenticators[kind].forget(hash);
    });
    this.subscriber = subscriber;
    if (!subscribed) this.logger.warn('could not subscribe to key changes yet; other daemons see them within the key cache lifetime');
  }

  close(): void {
    this.subscriber?.disconnect();
  }

  private publish(kind: KeyKind, hash: string): void {
    this.redis.publish(this.channel, `${kind}:${hash}`).catch((error: unknown) => this.logger.warn({ err: { message: (error as Error).message } }, 'could not publish a key change; other daemons see it within the key cache lifetime'));
  }
}
