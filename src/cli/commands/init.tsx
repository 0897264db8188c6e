import type { Command } from 'commander';
import { CliError } from '../client.js';
import { emit } from '../render.js';
import type { Io } from '../io.js';
import { UsageError } from '../options.js';

/**
 * `gateway init`: creates the database and the first admin account, and prints its `akm-`
 * key once. Works on the database file directly (the daemon need not run).
 */
export function registerInitCommand(program: Command, io: Io): void {
  program
    .command('init')
    .description('create the database and the first admin account; prints its management key once')
    .requiredOption('--email <email>', 'admin email')
    .requiredOption('--name <name>', 'admin name')
    .option('--password <password>', 'admin password, 8+ characters (default: $GATEWAY_INIT_PASSWORD)')
    .option('--config <file>', 'config file (for the database path)')
    .option('--json', 'print one JSON document on stdout')
    .action(async (flags: { email: string; name: string; password?: string; config?: string; json?: boolean }) => {
      // The store, validation and presenters load here, for this command only.
      const [{ loadConfig }, { isGatewayError }, { initializeFirstAdmin }, { requiredEmail, requiredString }, { openStore }, { requiredPassword }, { presentAccount, presentKey }] = await Promise.all([
        import('../../config/load.js'),
        import('../../core/errors.js'),
        import('../../core/management/init.js'),
        import('../../core/validate.js'),
        import('../../store/open.js'),
        import('../../api/auth.js'),
        import('../../api/presenters.js'),
      ]);
      const raw = { email: flags.email, name: flags.name, password: flags.password ?? io.env.GATEWAY_INIT_PASSWORD };
      let input: { email: string; name: string; password: string };
      try {
        input = { email: requiredEmail(raw), name: requiredString(raw, 'name', { max: 200 }), password: requiredPassword(raw) };
      } catch (error) {
        if (isGatewayError(error)) throw new UsageError(`--${error.message.replace(/^password: is required$/, 'password: is required (or set GATEWAY_INIT_PASSWORD)')}`);
        throw error;
      }
      const config = loadConfig({ ...(flags.config ? { file: flags.config } : {}), env: io.env });
      const store = await openStore(config.database);
      try {
        const result = await initializeFirstAdmin(store, { ...input, bcryptRounds: config.auth.bcryptRounds });
        const doc = { account: presentAccount(result.account), management_key: result.secret, key: presentKey(result.key, Date.now()) };
        await emit(io, flags.json, doc, (ui) => (
          <ui.SecretReveal
            label="Admin management key"
            secret={result.secret}
            entries={[
              ['account', `${result.account.email} (${result.account.id}, admin)`],
              ['database', store.description],
              ['use it', 'export GATEWAY_ADMIN_KEY=<the key above>'],
            ]}
          />
        ));
      } catch (error) {
        if (isGatewayError(error)) throw new CliError(error.message, error.status);
        throw error;
      } finally {
        await store.close();
      }
    });
}
