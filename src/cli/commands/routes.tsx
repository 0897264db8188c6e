import type { Command } from 'commander';
import type { RoutesView } from '../../core/routing/view.js';
import { emit } from '../render.js';
import type { Io } from '../io.js';
import { managementClient, withClientOptions, type ClientFlags } from '../options.js';

interface RoutesFlags extends ClientFlags {
  model?: string;
  all?: boolean;
}

/**
 * `gateway routes`: every model's deployments as the router sees them (GET /api/management/routes,
 * admin key). By default only the active models (several deployments, fallbacks, a rest or
 * traffic); `--all` every model; `--model` that one model, active or not.
 */
export function registerRoutesCommand(program: Command, io: Io): void {
  withClientOptions(program.command('routes').description('models\' deployments with their state, calls, failures and latency (admin key)'))
    .option('--model <id>', 'only this model (an id or short name), active or not')
    .option('--all', 'every model, not only those with several deployments, fallbacks, a rest or traffic')
    .action(async (flags: RoutesFlags) => {
      const query = { model: flags.model, active: flags.all || flags.model !== undefined ? undefined : 'true' };
      const view = await (await managementClient(flags, io)).get<RoutesView>('/api/management/routes', query);
      const empty = flags.all || flags.model !== undefined ? 'no models' : 'no active model (none has several deployments, fallbacks, a rest or traffic); --all lists every model';
      await emit(io, flags.json, view, (ui) => <ui.RoutesTable view={view} now={Date.now()} empty={empty} />);
    });
}
