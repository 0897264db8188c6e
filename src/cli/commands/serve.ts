import type { Command } from 'commander';
import type { Io } from '../io.js';
import { intArg } from '../options.js';

/** `gateway serve`: runs the daemon until SIGINT/SIGTERM, then shuts down gracefully. */
export function registerServeCommand(program: Command, io: Io): void {
  program
    .command('serve')
    .description('run the gateway daemon')
    .option('--config <file>', 'config file (default: $GATEWAY_CONFIG, else ./gateway.yaml, else built-in defaults)')
    .option('--port <port>', 'listen on this port instead of the config\'s', intArg(0, 65535))
    .action(async (flags: { config?: string; port?: number }) => {
      // The daemon's modules load here, not with the CLI (so `gateway --help` does not pay for them).
      const [{ loadConfig }, { startGateway }] = await Promise.all([import('../../config/load.js'), import('../../main.js')]);
      const config = loadConfig({ ...(flags.config ? { file: flags.config } : {}), env: io.env });
      const gateway = await startGateway(config, flags.port === undefined ? {} : { port: flags.port });
      await new Promise<void>((resolve) => {
        let stopping = false;
        const stop = (signal: string): void => {
          if (stopping) {
            io.err(`received ${signal} again: exiting without waiting\n`);
            process.exit(1);
          }
          stopping = true;
          gateway.app.logger.info({ signal }, 'shutting down');
          void gateway.close().then(resolve);
        };
        process.on('SIGINT', () => stop('SIGINT'));
        process.on('SIGTERM', () => stop('SIGTERM'));
      });
    });
}
