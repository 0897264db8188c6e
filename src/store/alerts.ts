import type { Db } from './db.js';

/**
 * Alerts the gateway raised (issue 30): one row per event, subject and period, so that
 * daemons sharing a store raise each alert once (the first insert wins), and the dashboard
 * lists the last ones with how their delivery went.
 */
export interface AlertRecord {
  id: string;
  event: string;
  /** What it is about: an account id, a key id, a deployment. */
  subject: string;
  /** The period it counts once in (`80:<period start>`, a day, an hour). */
  period: string;
  accountId: string | null;
  /** The JSON body sent to the webhook. */
  payload: string;
  createdAt: number;
  /** 'pending', 'delivered', 'failed', 'not_sent' (no webhook, or a lower threshold passed with a higher one). */
  delivery: string;
  attempts: number;
  lastError: string | null;
}

export interface AlertRow {
  id: string;
  event: string;
  subject: string;
  period: string;
  account_id: string | null;
  payload: string;
  created_at: number;
  delivery: string;
  attempts: number;
  last_error: string | null;
}

export const toAlert = (row: AlertRow): AlertRecord => ({
  id: row.id,
  event: row.event,
  subject: row.subject,
  period: row.period,
  accountId: row.account_id,
  payload: row.payload,
  createdAt: row.created_at,
  delivery: row.delivery,
  attempts: row.attempts,
  lastError: row.last_error,
});

export interface AlertDelivery {
  delivery: 'delivered' | 'failed';
  attempts: number;
  lastError: string | null;
}

export class AlertsRepo {
  private readonly insertStmt;
  private readonly listStmt;
  private readonly deliveredStmt;

  constructor(db: Db) {
    this.insertStmt = db.prepare(
      `INSERT OR IGNORE INTO alerts (id, event, subject, period, account_id, payload, created_at, delivery, attempts, last_error)
       VALUES (@id, @event, @subject, @period, @account_id, @payload, @created_at, @delivery, 0, NULL)`,
    );
    this.listStmt = db.prepare('SELECT * FROM alerts ORDER BY created_at DESC, id DESC LIMIT ?');
    this.deliveredStmt = db.prepare('UPDATE alerts SET delivery = ?, attempts = ?, last_error = ? WHERE id = ?');
  }

  /** True when this is the first of its event, subject and period (then it is to be sent). */
  insert(alert: Omit<AlertRecord, 'attempts' | 'lastError'>): boolean {
    return (
      this.insertStmt.run({
        id: alert.id,
        event: alert.event,
        subject: alert.subject,
        period: alert.period,
        account_id: alert.accountId,
        payload: alert.payload,
        created_at: alert.createdAt,
        delivery: alert.delivery,
      }).changes === 1
    );
  }

  recent(limit: number): AlertRecord[] {
    return (this.listStmt.all(limit) as AlertRow[]).map(toAlert);
  }

  delivered(id: string, result: AlertDelivery): void {
    this.deliveredStmt.run(result.delivery, result.attempts, result.lastError, id);
  }
}
