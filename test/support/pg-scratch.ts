import { randomBytes } from 'node:crypto';
import postgres from 'postgres';

/**
 * Scratch PostgreSQL databases at PG_ADMIN_URL (a role that may create databases), for the
 * tests (through postgres.ts) and for tools that are not tap tests (the soak): nothing here
 * imports tap.
 */
export const PG_ADMIN_URL = process.env.PG_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export interface ScratchDatabase {
  url: string;
  name: string;
  drop(): Promise<void>;
}

/** A new, empty database (`gw_test_<random>`); `drop()` ends its other connections and removes it. */
export async function scratchDatabase(): Promise<ScratchDatabase> {
  const name = `gw_test_${randomBytes(6).toString('hex')}`;
  const admin = postgres(PG_ADMIN_URL, { max: 1, onnotice: () => undefined });
  try {
    await admin.unsafe(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end({ timeout: 1 });
  }
  const url = new URL(PG_ADMIN_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    name,
    drop: async () => {
      const sql = postgres(PG_ADMIN_URL, { max: 1, onnotice: () => undefined });
      try {
        await sql.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await sql.end({ timeout: 1 });
      }
    },
  };
}

