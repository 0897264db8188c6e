import { Option, type Command } from 'commander';
import { emit, inr, when, type Ui } from '../render.js';
import type { Io } from '../io.js';
import { dateArg, inrArg, intArg, limitArg, managementClient, withClientOptions, type ClientFlags } from '../options.js';
import type { KeyView, ListOf } from './types.js';

/** A key's budget: 0 (or none, for a management key) is unlimited. */
const budgetText = (budget: number | undefined): string => (budget ? inr(budget) : 'unlimited');

interface KeyFlags extends ClientFlags {
  email?: string;
  name?: string;
  rateLimit?: number;
  budget?: number;
  expiresAt?: string;
  /** create: --no-cache sets false; update: --cache on|off. */
  cache?: boolean | string;
  /** Comma-separated; "" (update) clears. */
  models?: string;
  allowedIps?: string;
  /** null: "none" (update clears). */
  maxParallel?: number | null;
  tpm?: number | null;
  budgetPeriod?: string;
}

/** A comma-separated flag as a list ("" or "all"/"any" clears it). */
function listFlag(value: string): string[] {
  const items = value.split(',').map((item) => item.trim()).filter((item) => item !== '');
  return items.length === 1 && (items[0] === 'all' || items[0] === 'any') ? [] : items;
}

type Kind = 'api' | 'management';
const SEGMENT: Record<Kind, string> = { api: 'api-keys', management: 'management-keys' };

function keyBody(kind: Kind, flags: KeyFlags): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  if (flags.name !== undefined) body.name = flags.name;
  if (flags.expiresAt !== undefined) body.expires_at = flags.expiresAt === 'never' ? null : flags.expiresAt;
  if (kind === 'api') {
    if (flags.rateLimit !== undefined) body.rate_limit = flags.rateLimit;
    if (flags.budget !== undefined) body.budget = flags.budget;
    if (flags.cache === false || flags.cache === 'off') body.cache = false;
    else if (flags.cache === 'on') body.cache = true;
    if (flags.models !== undefined) body.models = listFlag(flags.models);
    if (flags.allowedIps !== undefined) body.allowed_ips = listFlag(flags.allowedIps);
    if (flags.maxParallel !== undefined) body.max_parallel = flags.maxParallel;
    if (flags.tpm !== undefined) body.tpm_limit = flags.tpm;
    if (flags.budgetPeriod !== undefined) body.budget_period = flags.budgetPeriod === 'none' ? null : flags.budgetPeriod;
  }
  return body;
}

function keyEntries(key: KeyView): [string, string][] {
  const entries: [string, string][] = [
    ['id', key.id],
    ['name', key.name],
    ['account', key.account_id],
  ];
  if (key.object === 'api_key') {
    entries.push(['rate limit', `${key.rate_limit} requests/minute`], ['budget', budgetText(key.budget) + (key.budget && key.budget_period ? ` ${key.budget_period}` : '')], ['spent', inr(key.spent)]);
    if (key.budget_period) entries.push(['spent this period', `${inr(key.spent_this_period)} (renews ${when(key.period_resets_at ?? null)})`]);
    entries.push(['calls in flight', key.max_parallel ? `at most ${key.max_parallel}` : 'no limit'], ['tokens per minute', key.tpm_limit ? String(key.tpm_limit) : 'no limit']);
    if (key.cache !== undefined) entries.push(['response cache', key.cache ? 'on' : 'off (opted out)']);
    entries.push(['models', key.models?.length ? key.models.join(', ') : 'all'], ['allowed ips', key.allowed_ips?.length ? key.allowed_ips.join(', ') : 'anywhere']);
  }
  entries.push(['expires', when(key.expires_at, 'never')], ['status', key.status]);
  return entries;
}

function KeyTable({ keys, ui }: { keys: KeyView[]; ui: Ui }) {
  const api = keys.some((key) => key.object === 'api_key');
  return (
    <ui.Table
      rows={keys}
      empty="no keys"
      columns={[
        { title: 'ID', value: (k) => k.id },
        { title: 'NAME', value: (k) => k.name },
        { title: 'KEY', value: (k) => k.masked_key },
        ...(api
          ? [
              { title: 'RPM', value: (k: KeyView) => String(k.rate_limit ?? ''), align: 'right' as const },
              { title: 'BUDGET', value: (k: KeyView) => budgetText(k.budget) + (k.budget && k.budget_period ? `/${k.budget_period}` : ''), align: 'right' as const },
              { title: 'SPENT', value: (k: KeyView) => inr(k.budget_period ? k.spent_this_period : k.spent), align: 'right' as const },
            ]
          : []),
        { title: 'STATUS', value: (k) => k.status },
        { title: 'EXPIRES', value: (k) => when(k.expires_at, 'never') },
        { title: 'LAST USED', value: (k) => when(k.last_used_at, 'never') },
      ]}
    />
  );
}

/** `gateway keys …` (sk- API keys) and `gateway mgmt-keys …` (akm- management keys). */
export function registerKeyCommands(program: Command, io: Io, kind: Kind): void {
  const label = kind === 'api' ? 'API key' : 'management key';
  const aLabel = kind === 'api' ? 'an API key' : 'a management key';
  const group =
    kind === 'api'
      ? program.command('keys').description('issue, list, update and revoke sk- API keys')
      : program.command('mgmt-keys').description('issue, list and revoke akm- management keys');
  const accountPath = (email: string | undefined): string => `/api/management/accounts/${encodeURIComponent(email ?? 'me')}/${SEGMENT[kind]}`;

  const create = withClientOptions(group.command('create').description(`issue a new ${label} (shown once)`))
    .option('--email <email>', 'the account (default: the management key\'s own account)')
    .requiredOption('--name <name>', 'a name to recognise the key by')
    .option('--expires-at <when>', 'ISO 8601 date-time or YYYY-MM-DD', dateArg);
  if (kind === 'api') {
    create
      .option('--rate-limit <rpm>', 'requests per minute, 1-10000 (default 10000)', intArg(1, 10_000))
      .option('--budget <inr>', 'spending limit in INR (0 = unlimited)', inrArg)
      .option('--models <list>', 'models the key may call: ids, aliases or patterns, comma-separated (default: all)')
      .option('--allowed-ips <list>', 'addresses and CIDRs the key may be used from, comma-separated (default: anywhere)')
      .option('--max-parallel <n>', 'calls in flight at once, 1-10000 (default: none)', limitArg(10_000))
      .option('--tpm <tokens>', 'tokens per minute, input + output (default: none)', limitArg(1_000_000_000))
      .option('--budget-period <period>', 'the budget renews: daily, weekly, monthly (governance.timezone) or a duration like 30d (default: none)')
      .option('--no-cache', 'the response cache neither serves nor stores this key\'s calls');
  }
  create.action(async (flags: KeyFlags) => {
    const key = await (await managementClient(flags, io)).post<KeyView>(accountPath(flags.email), keyBody(kind, flags));
    const secret = (kind === 'api' ? key.api_key : key.management_key) ?? '';
    await emit(io, flags.json, key, (ui) => <ui.SecretReveal label={`New ${label}`} secret={secret} entries={keyEntries(key)} />);
  });

  withClientOptions(group.command('list').description(`list ${label}s (no secrets)`))
    .option('--email <email>', 'the account (default: the management key\'s own account)')
    .action(async (flags: KeyFlags) => {
      const list = await (await managementClient(flags, io)).get<ListOf<KeyView>>(accountPath(flags.email));
      await emit(io, flags.json, list, (ui) => <KeyTable ui={ui} keys={list.data} />);
    });

  if (kind === 'api') {
    withClientOptions(group.command('update').description('change a key\'s name, rate limit, budget, expiry, models, allowed addresses or limits').argument('<id>', 'key id (key_…)'))
      .option('--name <name>', 'new name')
      .option('--rate-limit <rpm>', 'requests per minute, 1-10000', intArg(1, 10_000))
      .option('--budget <inr>', 'spending limit in INR (0 = unlimited)', inrArg)
      .option('--expires-at <when>', 'ISO 8601 date-time, YYYY-MM-DD, or "never"', dateArg)
      .option('--models <list>', 'models the key may call, comma-separated ("all" clears the list)')
      .option('--allowed-ips <list>', 'addresses and CIDRs the key may be used from, comma-separated ("any" clears the list)')
      .option('--max-parallel <n>', 'calls in flight at once, 1-10000 ("none" clears)', limitArg(10_000))
      .option('--tpm <tokens>', 'tokens per minute, input + output ("none" clears)', limitArg(1_000_000_000))
      .option('--budget-period <period>', 'the budget renews: daily, weekly, monthly (governance.timezone) or a duration like 30d ("none" clears)')
      .addOption(new Option('--cache <on|off>', 'whether the response cache serves and stores this key\'s calls').choices(['on', 'off']))
      .action(async (id: string, flags: KeyFlags) => {
        const key = await (await managementClient(flags, io)).patch<KeyView>(`/api/management/${SEGMENT[kind]}/${encodeURIComponent(id)}`, keyBody(kind, flags));
        await emit(io, flags.json, key, (ui) => (
          <>
            <ui.Success message={`${label} ${key.id} updated`} />
            <KeyTable ui={ui} keys={[key]} />
          </>
        ));
      });
  }

  withClientOptions(group.command('revoke').description(`revoke ${aLabel} at once`).argument('<id>', kind === 'api' ? 'key id (key_…)' : 'key id (mk_…)')).action(
    async (id: string, flags: KeyFlags) => {
      const key = await (await managementClient(flags, io)).delete<KeyView>(`/api/management/${SEGMENT[kind]}/${encodeURIComponent(id)}`);
      await emit(io, flags.json, key, (ui) => <ui.Success message={`${label} ${key.id} (${key.masked_key}) revoked`} />);
    },
  );
}
