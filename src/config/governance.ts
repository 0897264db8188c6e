import { DEFAULT_PERIOD_TIME_ZONE, timeZoneProblem } from '../core/periods.js';
import { parseInr } from '../core/money.js';
import { Problems, readSection, readString, type Raw } from './fields.js';
import type { AlertEvent, AlertsConfig, GovernanceConfig } from './types.js';

/** The `governance` and `alerts` sections (issue 30): load.ts calls these. */

export const DEFAULT_TIME_ZONE = DEFAULT_PERIOD_TIME_ZONE;

export function readGovernance(raw: unknown, problems: Problems): GovernanceConfig {
  const section = readSection(raw, 'governance', ['timezone'], problems);
  const zone = readString(section, 'timezone', 'governance', problems) ?? DEFAULT_TIME_ZONE;
  const problem = timeZoneProblem(zone);
  if (problem) {
    problems.add('governance.timezone', problem);
    return { timeZone: DEFAULT_TIME_ZONE };
  }
  return { timeZone: zone };
}

function safeProtocol(text: string): string {
  try {
    return new URL(text).protocol;
  } catch {
    return '';
  }
}

export const ALERT_EVENTS: readonly AlertEvent[] = ['balance_low', 'key_budget', 'account_spend_limit', 'deployment_resting'];

export function readAlerts(raw: unknown, problems: Problems): AlertsConfig {
  const section: Raw = readSection(raw, 'alerts', ['webhook_url', 'webhook_secret', 'events', 'balance_low_inr'], problems);
  // Kept exactly as written (a trailing slash included: the receiver may redirect without it,
  // and alerts follow no redirect). The value is never echoed: it may hold a token.
  const webhookUrl = readString(section, 'webhook_url', 'alerts', problems);
  if (webhookUrl !== undefined && !/^https?:$/.test(safeProtocol(webhookUrl))) problems.add('alerts.webhook_url', 'must be an http(s) URL');
  const webhookSecret = readString(section, 'webhook_secret', 'alerts', problems);
  let events = ALERT_EVENTS;
  const listed = section.events;
  if (listed !== undefined && listed !== null) {
    if (!Array.isArray(listed) || listed.some((event) => typeof event !== 'string' || !ALERT_EVENTS.includes(event as AlertEvent))) {
      problems.add('alerts.events', `must be a list of: ${ALERT_EVENTS.join(', ')}`);
    } else events = [...new Set(listed as AlertEvent[])];
  }
  let balanceLowMicros = 0;
  const low = section.balance_low_inr;
  if (low !== undefined && low !== null && low !== '') {
    const parsed = parseInr(low);
    if (!parsed.ok) problems.add('alerts.balance_low_inr', parsed.rule);
    else balanceLowMicros = parsed.micros;
  }
  const valid = webhookUrl !== undefined && /^https?:$/.test(safeProtocol(webhookUrl));
  return {
    ...(valid ? { webhookUrl } : {}),
    ...(webhookSecret !== undefined ? { webhookSecret } : {}),
    events,
    balanceLowMicros,
  };
}
