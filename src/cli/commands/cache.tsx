import type { Command } from 'commander';
import { emit } from '../render.js';
import type { Io } from '../io.js';
import { managementClient, UsageError, withClientOptions, type ClientFlags } from '../options.js';

interface CacheView {
  object: 'cache';
  enabled: boolean;
  scope?: string;
  ttl_seconds?: number;
  max_entries?: number;
  max_bytes?: number;
  exact_models?: string[];
  semantic_models?: string[];
  entries?: number;
  bytes?: number;
  semantic_entries?: number;
  redis?: { entries: number; bytes: number };
}

interface PurgeView {
  object: 'cache.purge';
  account_id: string | null;
  removed: number;
}

const mb = (bytes: number | undefined): string => `${((bytes ?? 0) / 1024 / 1024).toFixed(1)} MB`;

/** `gateway cache stats` and `gateway cache purge`: the response cache, through the management API. */
export function registerCacheCommands(program: Command, io: Io): void {
  const cache = program.command('cache').description('the response cache: what it holds, and purges');

  withClientOptions(cache.command('stats').description('what the response cache holds (admin key)')).action(async (flags: ClientFlags) => {
    const view = await (await managementClient(flags, io)).get<CacheView>('/api/management/cache');
    await emit(io, flags.json, view, (ui) =>
      view.enabled ? (
        <ui.Details
          entries={[
            ['entries', `${view.entries ?? 0} (${view.semantic_entries ?? 0} with a semantic vector), ${mb(view.bytes)} of ${mb(view.max_bytes)}, at most ${view.max_entries ?? 0}`],
            ...(view.redis ? ([['exact tier in Redis', `${view.redis.entries} entries, ${mb(view.redis.bytes)}`]] as [string, string][]) : []),
            ['scope', view.scope ?? ''],
            ['ttl', `${view.ttl_seconds ?? 0} s`],
            ['exact tier', (view.exact_models ?? []).join(', ') || 'no model'],
            ['semantic tier', (view.semantic_models ?? []).join(', ') || 'no model'],
          ]}
        />
      ) : (
        <ui.Success message="the response cache is off (cache.enabled in the daemon's config)" />
      ),
    );
  });

  withClientOptions(cache.command('purge').description('remove cached answers: one account\'s (--email), or every account\'s (--all, admin key)'))
    .option('--email <email>', 'the account (an id or e-mail; "me" for the key\'s own)')
    .option('--all', 'every account (admin key)')
    .action(async (flags: ClientFlags & { email?: string; all?: boolean }) => {
      if ((flags.all === true) === (flags.email !== undefined)) throw new UsageError('give --email <account> or --all');
      const path = flags.all ? '/api/management/cache' : `/api/management/cache?account=${encodeURIComponent(flags.email ?? '')}`;
      const view = await (await managementClient(flags, io)).delete<PurgeView>(path);
      await emit(io, flags.json, view, (ui) => <ui.Success message={`removed ${view.removed} cached answer${view.removed === 1 ? '' : 's'}${view.account_id ? ` of ${flags.email ?? view.account_id}` : ' (every account)'}`} />);
    });
}
