import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { Logger } from 'pino';
import type { ImageStore } from '../../store/types.js';

/** How long a hosted image stays reachable (OpenAI's own image URLs last as long). */
export const HOSTED_IMAGE_TTL_MS = 60 * 60 * 1000;

const EXTENSIONS: Readonly<Record<string, string>> = { 'image/png': 'png', 'image/jpeg': 'jpeg', 'image/webp': 'webp' };
const TYPES: Readonly<Record<string, string>> = { png: 'image/png', jpeg: 'image/jpeg', webp: 'image/webp' };

/** `<expiry, base36 ms>-<32 random bytes, base64url>.<ext>`: the random part makes it unguessable. */
const NAME = /^([0-9a-z]{1,11})-([A-Za-z0-9_-]{43})\.(png|jpeg|webp)$/;

/**
 * Images the gateway keeps for clients that asked for URLs from a model that answers only in
 * base64 (gpt-image-1, Gemini): files in `gateway-hosted-images/` next to the database (daemons sharing it share them),
 * or, with a store that keeps them (PostgreSQL), rows every host's daemons read; each served
 * at an unguessable name for an hour, then deleted by a sweep.
 */
export class HostedImages {
  readonly dir: string;
  private readonly sweeper: NodeJS.Timeout;

  constructor(
    databasePath: string,
    private readonly logger: Logger,
    private readonly ttlMs = HOSTED_IMAGE_TTL_MS,
    private readonly shared?: ImageStore,
  ) {
    // A name of the gateway's own: the directory next to the database may be shared with anything.
    this.dir = databasePath === ':memory:' ? join(tmpdir(), `gateway-hosted-images-${process.pid}`) : join(dirname(databasePath), 'gateway-hosted-images');
    if (!shared) mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    this.sweeper = setInterval(() => (shared ? void this.sweepShared() : this.sweep()), Math.min(ttlMs, 10 * 60 * 1000));
    this.sweeper.unref();
  }

  /** Keeps an image; returns its file name (the last part of its URL). */
  async put(data: Buffer, mimeType: string): Promise<string> {
    const expiresAt = Date.now() + this.ttlMs;
    const name = `${expiresAt.toString(36)}-${randomBytes(32).toString('base64url')}.${EXTENSIONS[mimeType] ?? 'png'}`;
    if (this.shared) {
      await this.shared.put(name, data, TYPES[EXTENSIONS[mimeType] ?? 'png'] ?? 'image/png', expiresAt);
      return name;
    }
    await writeFile(join(this.dir, name), data, { mode: 0o600 });
    return name;
  }

  /** The image, while its name is well formed and unexpired; undefined otherwise. */
  async get(name: string): Promise<{ data: Buffer; contentType: string; expiresAt: number } | undefined> {
    const match = NAME.exec(name);
    if (!match) return undefined;
    const expiresAt = parseInt(match[1] as string, 36);
    if (!(expiresAt > Date.now())) return undefined;
    if (this.shared) return (await this.shared.get(name, Date.now())) ?? undefined;
    try {
      return { data: await readFile(join(this.dir, name)), contentType: TYPES[match[3] as string] ?? 'application/octet-stream', expiresAt };
    } catch {
      return undefined;
    }
  }

  /** Deletes expired images; nothing else in the directory is touched. */
  sweep(now = Date.now()): number {
    let removed = 0;
    let names: string[];
    try {
      names = readdirSync(this.dir);
    } catch {
      return 0;
    }
    for (const name of names) {
      const match = NAME.exec(name);
      if (!match || parseInt(match[1] as string, 36) > now) continue;
      try {
        rmSync(join(this.dir, name), { force: true });
        removed += 1;
      } catch (error) {
        this.logger.warn({ err: error }, 'could not delete an expired hosted image');
      }
    }
    return removed;
  }

  private async sweepShared(): Promise<void> {
    try {
      await this.shared?.sweep(Date.now());
    } catch (error) {
      this.logger.warn({ err: error }, 'could not delete expired hosted images');
    }
  }

  close(): void {
    clearInterval(this.sweeper);
  }
}
