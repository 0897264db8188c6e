import type { Logger } from 'pino';
import type { AlertEvent, AlertsConfig } from '../../config/types.js';
import type { AlertStore, Store } from '../../store/types.js';
import { newId } from '../keys.js';
import { formatInrDisplay, microsToInr } from '../money.js';
import { parsePeriod, periodWindow } from '../periods.js';
import { periodSpend } from '../spend.js';
import { WebhookSender, type AlertPayload, type DeliveryResult } from './webhook.js';

/**
 * Raises the alerts of issue 30: a wallet below `alerts.balance_low_inr` (once a day), a key at
 * 80% and 100% of its budget in its period, an account at 80% and 100% of its spend limit in
 * its period, a deployment the router rests (once an hour). Settled calls are watched off the
 * request path: `observe` only notes the account and key, and a check a little later (after
 * the billing batch) reads their funds once for all the calls that ended meanwhile. Each alert
 * is recorded once per event, subject and period in the store (the first daemon to record it
 * sends it), then sent to the webhook from its queue (webhook.ts).
 */

/** How long settled calls are gathered before their accounts are checked. */
const CHECK_DELAY_MS = 250;
const THRESHOLDS = [100, 80] as const;
const HOUR_MS = 3_600_000;

interface Candidate {
  event: AlertEvent;
  subject: string;
  period: string;
  accountId: string | null;
  text: string;
  fields: Record<string, unknown>;
  /** A lower threshold passed together with a higher one: recorded (so it is not raised later) but not sent. */
  quiet?: boolean;
}

export class AlertMonitor {
  private readonly sender: WebhookSender | undefined;
  private readonly events: ReadonlySet<AlertEvent>;
  private pending = new Map<string, Set<string>>();
  /** Counters that refused a call since the last check (`k:<key>`, `a:<account>`): at 100% whatever they spent. */
  private refusedBy = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  constructor(
    private readonly config: AlertsConfig,
    private readonly store: Store,
    private readonly timeZone: string,
    private readonly logger: Logger,
    private readonly now: () => number = Date.now,
  ) {
    this.events = new Set(config.events);
    this.sender =
      config.webhookUrl === undefined
        ? undefined
        : new WebhookSender({ url: config.webhookUrl, ...(config.webhookSecret !== undefined ? { secret: config.webhookSecret } : {}), onResult: (result) => this.delivered(result) });
  }

  private get alerts(): AlertStore {
    return this.store.alerts;
  }

  /**
   * A call of `keyId` on `accountId` was charged: checked a little later, with the others.
   * `watched`: its key has a budget or its account a spend limit; otherwise only a low balance
   * can raise an alert, and without balance_low_inr nothing is noted (no read at all).
   */
  observe(accountId: string, keyId: string | null, watched = true): void {
    if (!watched && (this.config.balanceLowMicros === 0 || !this.events.has('balance_low'))) return;
    let keys = this.pending.get(accountId);
    if (!keys) this.pending.set(accountId, (keys = new Set()));
    if (keyId) keys.add(keyId);
    if (this.timer === undefined && this.running === undefined) {
      this.timer = setTimeout(() => void this.check(), CHECK_DELAY_MS);
      this.timer.unref();
    }
  }

  /**
   * Admission refused a call: the key's budget (or the account's spend limit) cannot cover it.
   * Holds are the calls' worst case, so a budget refuses before it is spent to the last paisa:
   * that is its 100%.
   */
  refused(reason: 'budget_exceeded' | 'account_spend_limit', accountId: string, keyId: string): void {
    this.refusedBy.add(reason === 'budget_exceeded' ? `k:${keyId}` : `a:${accountId}`);
    this.observe(accountId, keyId, true);
  }

  /** The router rested a deployment (`d:<id>`); provider keys' rests are not alerts. */
  resting(restId: string, until: number, reason: string): void {
    if (!restId.startsWith('d:') || !this.events.has('deployment_resting')) return;
    const deployment = restId.slice(2);
    const now = this.now();
    void this.raise({
      event: 'deployment_resting',
      subject: deployment,
      period: String(Math.floor(now / HOUR_MS) * HOUR_MS),
      accountId: null,
      text: `Deployment ${deployment} is resting until ${new Date(until).toISOString()} (${reason}): the router sends its calls elsewhere meanwhile.`,
      fields: { deployment, reason, until: new Date(until).toISOString() },
    });
  }

  /** Checks pending now and waits for deliveries in flight (tests, shutdown), at most `ms`. */
  async flush(ms = 5000): Promise<void> {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
      await this.check();
    }
    await this.running;
    await this.sender?.drain(ms);
  }

  close(): void {
    if (this.timer) clearTimeout(this.timer);
    this.sender?.close();
  }

  private async check(): Promise<void> {
    this.timer = undefined;
    const batch = this.pending;
    const refused = this.refusedBy;
    this.pending = new Map();
    this.refusedBy = new Set();
    this.running = (async () => {
      try {
        // Settled calls not yet in the ledger go in first: the funds read below sees them.
        this.store.barrier.pass();
        for (const [accountId, keys] of batch) {
          for (const candidate of await this.candidates(accountId, [...keys], refused)) await this.raise(candidate);
        }
      } catch (error) {
        this.logger.warn({ err: error }, 'could not check alerts');
      }
    })();
    await this.running;
    this.running = undefined;
    if (this.pending.size > 0 && this.timer === undefined) {
      this.timer = setTimeout(() => void this.check(), CHECK_DELAY_MS);
      this.timer.unref();
    }
  }

  private async candidates(accountId: string, keyIds: string[], refused: ReadonlySet<string>): Promise<Candidate[]> {
    const out: Candidate[] = [];
    const now = this.now();
    let accountChecked = false;
    // The account's alerts come with the first key's funds read (a call without a key: '').
    for (const keyId of keyIds.length > 0 ? keyIds : ['']) {
      const funds = await this.store.funds(accountId, keyId);
      if (!funds) return out;
      if (!accountChecked) {
        accountChecked = true;
        const low = this.config.balanceLowMicros;
        if (low > 0 && funds.balanceMicros < low && this.events.has('balance_low')) {
          const day = periodWindow({ kind: 'daily' }, now, 0, this.timeZone);
          out.push({
            event: 'balance_low',
            subject: accountId,
            period: String(day.start),
            accountId,
            text: `The wallet of ${await this.accountName(accountId)} is at ${formatInrDisplay(funds.balanceMicros)}, below ${formatInrDisplay(low)}: top it up before its calls are refused.`,
            fields: { account_id: accountId, balance_inr: microsToInr(funds.balanceMicros), threshold_inr: microsToInr(low) },
          });
        }
        const limit = funds.account.spendLimitMicros;
        if (limit !== null && this.events.has('account_spend_limit')) {
          const spend = periodSpend(funds.account, funds.account.spendPeriod, now, this.timeZone);
          out.push(...this.thresholds('account_spend_limit', accountId, accountId, spend.spentMicros, limit, funds.account.spendPeriod, spend.window?.start, spend.window?.resetsAt, `The account ${await this.accountName(accountId)}`, 'spend limit', refused.has(`a:${accountId}`)));
        }
      }
      const key = funds.key;
      if (key && key.budgetMicros !== null && this.events.has('key_budget')) {
        const spend = periodSpend(key, key.budgetPeriod, now, this.timeZone);
        const name = (await this.store.apiKeys.byId(keyId))?.name ?? keyId;
        out.push(...this.thresholds('key_budget', keyId, accountId, spend.spentMicros, key.budgetMicros, key.budgetPeriod, spend.window?.start, spend.window?.resetsAt, `The API key '${name}' (${keyId}) of ${await this.accountName(accountId)}`, 'budget', refused.has(`k:${keyId}`)));
      }
    }
    return out;
  }

  /** The 100% and 80% alerts of a spend counter: the highest passed is sent, a lower one with it only recorded. */
  private thresholds(
    event: AlertEvent,
    subject: string,
    accountId: string,
    spent: number,
    limit: number,
    period: string | null,
    start: number | undefined,
    resetsAt: number | undefined,
    who: string,
    what: string,
    refused: boolean,
  ): Candidate[] {
    const out: Candidate[] = [];
    for (const threshold of THRESHOLDS) {
      if (spent * 100 < limit * threshold && !(refused && threshold === 100)) continue;
      const per = period && parsePeriod(period) ? ` ${period}` : '';
      const renews = resetsAt === undefined ? '' : `; it renews at ${new Date(resetsAt).toISOString()}`;
      out.push({
        event,
        subject,
        // The limit too: a raised budget or limit can alert again in the same period.
        period: `${threshold}:${start ?? 0}:${limit}`,
        accountId,
        text:
          threshold === 100
            ? `${who} has reached its${per} ${what} of ${formatInrDisplay(limit)} (${formatInrDisplay(spent)} spent): calls it cannot cover are refused${renews}.`
            : `${who} has used ${threshold}% of its${per} ${what} of ${formatInrDisplay(limit)} (${formatInrDisplay(spent)} spent)${renews}.`,
        fields: { account_id: accountId, threshold, spent_inr: microsToInr(spent), limit_inr: microsToInr(limit), period, ...(resetsAt !== undefined ? { period_resets_at: new Date(resetsAt).toISOString() } : {}) },
        ...(out.length > 0 ? { quiet: true } : {}),
      });
    }
    return out;
  }

  private async accountName(accountId: string): Promise<string> {
    return (await this.store.accounts.byId(accountId))?.email ?? accountId;
  }

  private async raise(candidate: Candidate): Promise<void> {
    const now = this.now();
    const payload: AlertPayload = { id: newId('alt'), event: candidate.event, subject: candidate.subject, created_at: new Date(now).toISOString(), text: candidate.text, ...candidate.fields };
    const send = this.sender !== undefined && !candidate.quiet;
    try {
      const first = await this.alerts.insert({
        id: payload.id,
        event: candidate.event,
        subject: candidate.subject,
        period: candidate.period,
        accountId: candidate.accountId,
        payload: JSON.stringify(payload),
        createdAt: now,
        delivery: send ? 'pending' : 'not_sent',
      });
      if (!first) return;
      this.logger.warn({ alert: payload.id, event: candidate.event, subject: candidate.subject }, candidate.text);
      if (send) this.sender?.enqueue(payload);
    } catch (error) {
      this.logger.warn({ err: error, event: candidate.event }, 'could not record an alert');
    }
  }

  private delivered(result: DeliveryResult): void {
    if (!result.ok) this.logger.warn({ alert: result.id, attempts: result.attempts, status: result.status, error: result.error }, 'alert not delivered');
    Promise.resolve(this.alerts.delivered(result.id, { delivery: result.ok ? 'delivered' : 'failed', attempts: result.attempts, lastError: result.error ?? null })).catch(() => undefined);
  }
}
