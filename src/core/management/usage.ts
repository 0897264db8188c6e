import { EventEmitter } from 'node:events';
import type { UsageFilter, UsageRecord } from '../../store/usage.js';
import type { Store } from '../../store/types.js';

export type UsageListener = (record: UsageRecord) => void;

/**
 * Usage rows and the live feed of them. `publish` is called once a call's usage row is
 * committed; listeners (the SSE usage stream, `gateway usage tail`) get it at once.
 */
export class UsageService {
  private readonly feed = new EventEmitter();
  /** Told of this daemon's rows (usage-relay.ts shows them on the other daemons' feeds). */
  onPublish: ((record: UsageRecord) => void) | undefined;

  constructor(private readonly store: Store) {
    this.feed.setMaxListeners(0);
  }

  async list(filter: UsageFilter): Promise<UsageRecord[]> {
    return this.store.usage.list(filter);
  }

  /** A row this daemon committed: to its listeners, and to the other daemons'. */
  publish(record: UsageRecord): void {
    this.feed.emit('usage', record);
    this.onPublish?.(record);
  }

  /** A row another daemon committed: to this daemon's listeners only. */
  emit(record: UsageRecord): void {
    this.feed.emit('usage', record);
  }

  /** How many live listeners are subscribed (open usage streams). */
  get subscribers(): number {
    return this.feed.listenerCount('usage');
  }

  subscribe(listener: UsageListener): () => void {
    this.feed.on('usage', listener);
    return () => this.feed.off('usage', listener);
  }
}
