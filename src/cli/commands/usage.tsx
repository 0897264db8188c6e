import type { Command } from 'commander';
import { parseInr } from '../../core/money.js';
import { SseParser } from '../../providers/shared/sse-parser.js';
import { addToTotals, NO_USAGE, type UsageTotals } from '../usage-totals.js';
import { emit, loadUi } from '../render.js';
import type { Io } from '../io.js';
import { dateArg, intArg, managementClient, withClientOptions, type ClientFlags } from '../options.js';
import type { ListOf, UsageView } from './types.js';

interface UsageFlags extends ClientFlags {
  account?: string;
  apiKey?: string;
  model?: string;
  since?: string;
  until?: string;
  limit?: number;
  count?: number;
}

function filters(flags: UsageFlags): Record<string, string | number | undefined> {
  return { account: flags.account, key: flags.apiKey, model: flags.model };
}

function withFilters(command: Command): Command {
  return command
    .option('--account <id-or-email>', 'only this account\'s calls')
    .option('--api-key <key-id>', 'only this API key\'s calls (key_…)')
    .option('--model <id>', 'only this model\'s calls');
}

/** `gateway usage list` and `gateway usage tail`. */
export function registerUsageCommands(program: Command, io: Io): void {
  const usage = program.command('usage').description('inference calls as they were billed');

  withFilters(withClientOptions(usage.command('list').description('list calls, newest first')))
    .option('--since <when>', 'from this time (ISO 8601 or YYYY-MM-DD)', dateArg)
    .option('--until <when>', 'before this time (ISO 8601 or YYYY-MM-DD)', dateArg)
    .option('--limit <n>', 'rows to show', intArg(1, 1000), 50)
    .action(async (flags: UsageFlags) => {
      const list = await (await managementClient(flags, io)).get<ListOf<UsageView>>('/api/management/usage', { ...filters(flags), since: flags.since, until: flags.until, limit: flags.limit });
      await emit(io, flags.json, list, (ui) => <ui.Table columns={ui.usageColumns(list.data)} rows={list.data} empty="no calls" />);
    });

  withFilters(withClientOptions(usage.command('tail').description('follow calls live as they settle')))
    .option('--count <n>', 'stop after this many calls', intArg(1, Number.MAX_SAFE_INTEGER))
    .action(async (flags: UsageFlags) => {
      const client = await managementClient(flags, io);
      const controller = new AbortController();
      const stop = (): void => controller.abort();
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
      const live = !flags.json && io.interactive;
      const rows: UsageView[] = [];
      let totals: UsageTotals = NO_USAGE;
      const url = client.baseUrl;
      // Ink and the views load only for the live view (JSON lines and plain rows need neither).
      const ui = live ? await loadUi() : undefined;
      const view = ui ? ui.render(<ui.UsageTail rows={rows} totals={totals} url={url} />, { exitOnCtrlC: false }) : undefined;
      try {
        const body = await client.stream('/api/management/usage/stream', filters(flags), controller.signal);
        const parser = new SseParser();
        for await (const chunk of body) {
          for (const event of parser.push(chunk)) {
            if (event.event !== 'usage') continue;
            const row = JSON.parse(event.data) as UsageView;
            const cost = parseInr(row.cost);
            totals = addToTotals(totals, row, cost.ok ? cost.micros : 0);
            if (flags.json) io.out(`${JSON.stringify(row)}\n`);
            else if (view && ui) {
              rows.push(row);
              if (rows.length > 20) rows.shift();
              view.rerender(<ui.UsageTail rows={[...rows]} totals={totals} url={url} />);
            } else await emit(io, false, row, (ui) => <ui.Table columns={ui.usageColumns([row])} rows={[row]} />);
            if (flags.count !== undefined && totals.calls >= flags.count) controller.abort();
          }
        }
      } catch (error) {
        if (!controller.signal.aborted) throw error;
      } finally {
        process.off('SIGINT', stop);
        process.off('SIGTERM', stop);
        view?.unmount();
      }
    });
}
