import { Command, CommanderError } from 'commander';
import { ConfigError } from '../config/errors.js';
import { MigrationError } from '../store/migration-error.js';
import { CliError } from './client.js';
import { registerServeCommand } from './commands/serve.js';
import { processIo, type Io } from './io.js';
import { UsageError } from './options.js';

/** Exit codes: 0 success, 1 failure (one line on stderr), 2 usage error. */
export const EXIT = { ok: 0, failure: 1, usage: 2 } as const;

/**
 * The program. `gateway serve` registers only itself: the admin commands pull in Ink and
 * React (~50 MB of heap), which a daemon has no use for.
 */
export async function createProgram(io: Io, argv: readonly string[] = []): Promise<Command> {
  const program = new Command('gateway')
    .description('Self-hosted LLM gateway: daemon and admin CLI')
    .version('0.1.0')
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride()
    .configureOutput({ writeOut: (text) => io.out(text), writeErr: (text) => io.err(text) });
  registerServeCommand(program, io);
  if (argv[0] !== 'serve') {
    const [init, accounts, wallet, keys, models, usage, mcp, cache, routes, db, status] = await Promise.all([
      import('./commands/init.js'),
      import('./commands/accounts.js'),
      import('./commands/wallet.js'),
      import('./commands/keys.js'),
      import('./commands/models.js'),
      import('./commands/usage.js'),
      import('./commands/mcp.js'),
      import('./commands/cache.js'),
      import('./commands/routes.js'),
      import('./commands/db.js'),
      import('./commands/status.js'),
    ]);
    init.registerInitCommand(program, io);
    accounts.registerAccountCommands(program, io);
    wallet.registerWalletCommands(program, io);
    keys.registerKeyCommands(program, io, 'api');
    keys.registerKeyCommands(program, io, 'management');
    models.registerModelCommands(program, io);
    usage.registerUsageCommands(program, io);
    mcp.registerMcpCommand(program, io);
    cache.registerCacheCommands(program, io);
    routes.registerRoutesCommand(program, io);
    db.registerDbCommands(program, io);
    status.registerStatusCommand(program, io);
  }
  // Subcommands inherit exitOverride and output settings only when set on each of them.
  const apply = (command: Command): void => {
    for (const sub of command.commands) {
      sub.exitOverride().configureOutput({ writeOut: (text) => io.out(text), writeErr: (text) => io.err(text) });
      apply(sub);
    }
  };
  apply(program);
  return program;
}

/**
 * A command that printed its whole result and still fails (`gateway status` of a daemon that is
 * not ready): exit 1 with its message on stderr, and no second JSON document on stdout.
 */
export class ReportedFailure extends Error {
  override name = 'ReportedFailure';
}

/** Runs the CLI and returns the exit code; never throws. */
export async function runCli(argv: readonly string[], io: Io = processIo): Promise<number> {
  const json = argv.includes('--json');
  const fail = (code: number, message: string, extra: Record<string, unknown> = {}): number => {
    io.err(`error: ${message}\n`);
    if (json) io.out(`${JSON.stringify({ error: { message, ...extra } }, null, 2)}\n`);
    return code;
  };
  try {
    await (await createProgram(io, argv)).parseAsync(argv, { from: 'user' });
    return EXIT.ok;
  } catch (error) {
    if (error instanceof CommanderError) {
      // --help, --version and `help <cmd>` exit 0; a group run without its subcommand shows
      // its usage as an error (exitCode 1), which is a usage error like any other.
      if (error.exitCode === 0) return EXIT.ok;
      // Commander already wrote the message to stderr; --json still gets its document.
      if (json) io.out(`${JSON.stringify({ error: { message: error.message.replace(/^error: /, '') } }, null, 2)}\n`);
      return EXIT.usage;
    }
    if (error instanceof ReportedFailure) {
      io.err(`error: ${error.message}\n`);
      return EXIT.failure;
    }
    if (error instanceof UsageError) return fail(EXIT.usage, error.message);
    if (error instanceof ConfigError) {
      io.err(`error: invalid configuration (${error.source}):\n${error.problems.map((line) => `  ${line}\n`).join('')}`);
      if (json) io.out(`${JSON.stringify({ error: { message: 'invalid configuration', problems: error.problems } }, null, 2)}\n`);
      return EXIT.failure;
    }
    if (error instanceof CliError) return fail(EXIT.failure, error.message, cliErrorFields(error));
    if (error instanceof MigrationError) return fail(EXIT.failure, error.message);
    return fail(EXIT.failure, error instanceof Error ? error.message : String(error));
  }
}

/** The daemon's own error fields (type, integer code, reason) when it answered with an error body. */
function cliErrorFields(error: CliError): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (error.status !== undefined) out.status = error.status;
  const body = (error.body as { error?: Record<string, unknown> } | undefined)?.error;
  if (body && typeof body === 'object') {
    for (const field of ['type', 'code', 'reason', 'param'] as const) if (body[field] !== undefined) out[field] = body[field];
  }
  return out;
}

export async function main(): Promise<void> {
  const code = await runCli(process.argv.slice(2));
  // Let stdout drain before exiting (a pipe may still hold the JSON document).
  process.stdout.write('', () => process.exit(code));
}
