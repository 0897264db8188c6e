import type { ImageStore } from '../types.js';
import type { PgSql } from './db.js';

/** Hosted images on PostgreSQL: whichever daemon the balancer picks serves the URL. */
export class PgImages implements ImageStore {
  constructor(private readonly sql: PgSql) {}

  async put(name: string, data: Buffer, contentType: string, expiresAt: number): Promise<void> {
    await this.sql`INSERT INTO hosted_images (name, content_type, data, expires_at) VALUES (${name}, ${contentType}, ${data}, ${expiresAt})`;
  }

  async get(name: string, now: number): Promise<{ data: Buffer; contentType: string; expiresAt: number } | undefined> {
    const [row] = await this.sql<Array<{ content_type: string; data: Buffer; expires_at: number }>>`
      SELECT content_type, data, expires_at FROM hosted_images WHERE name = ${name} AND expires_at > ${now}`;
    return row && { data: row.data, contentType: row.content_type, expiresAt: row.expires_at };
  }

  async sweep(now: number): Promise<number> {
    return (await this.sql`DELETE FROM hosted_images WHERE expires_at <= ${now}`).count;
  }
}
