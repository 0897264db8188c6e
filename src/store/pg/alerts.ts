import { toAlert, type AlertDelivery, type AlertRecord, type AlertRow } from '../alerts.js';
import type { PgSql } from './db.js';

/** Alerts on PostgreSQL: AlertsRepo's contract (one row per event, subject and period across every daemon). */
export class PgAlerts {
  constructor(private readonly sql: PgSql) {}

  async insert(alert: Omit<AlertRecord, 'attempts' | 'lastError'>): Promise<boolean> {
    const rows = await this.sql`
      INSERT INTO alerts (id, event, subject, period, account_id, payload, created_at, delivery, attempts, last_error)
      VALUES (${alert.id}, ${alert.event}, ${alert.subject}, ${alert.period}, ${alert.accountId}, ${alert.payload}, ${alert.createdAt}, ${alert.delivery}, 0, NULL)
      ON CONFLICT (event, subject, period) DO NOTHING RETURNING id`;
    return rows.length === 1;
  }

  async recent(limit: number): Promise<AlertRecord[]> {
    return (await this.sql<AlertRow[]>`SELECT * FROM alerts ORDER BY created_at DESC, id DESC LIMIT ${limit}`).map(toAlert);
  }

  async delivered(id: string, result: AlertDelivery): Promise<void> {
    await this.sql`UPDATE alerts SET delivery = ${result.delivery}, attempts = ${result.attempts}, last_error = ${result.lastError} WHERE id = ${id}`;
  }
}
