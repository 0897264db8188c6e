import { Command, CommanderError } from 'commander';
import { ConfigError } from '../config/load.js';
import { MigrationError } from '../store/db.js';
import { CliError } from './client.js';
import { registerAccountCommands } from './commands/accounts.js';
import { registerInitCommand } from './commands/init.js';
import { registerKeyCommands } from './commands/keys.js';
import { registerModelCommands } from './commands/models.js';
import { registerServeCommand } from './commands/serve.js';
import { registerUsageCommands } from './commands/usage.js';
import { registerWalletCommands } from './commands/wallet.js';
import { processIo, type Io } from './io.js';
import { UsageError } from './options.js';

/** Exit codes: 0 success, 1 failure (one line on stderr), 2 usage error. */
export const EXIT = { ok: 0, failure: 1, usage: 2 } as const;

export function createProgram(io: Io): Command {
  const program = new Command('gateway')
    .description('Self-hosted LLM gateway: daemon and admin CLI')
    .version('0.1.0')
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride()
    .configureOutput({ writeOut: (text) => io.out(text), writeErr: (text) => io.err(text) });
  registerServeCommand(program, io);
  registerInitCommand(program, io);
  registerAccountCommands(program, io);
  registerWalletCommands(program, io);
  registerKeyCommands(program, io, 'api');
  registerKeyCommands(program, io, 'management');
  registerModelCommands(program, io);
  registerUsageCommands(program, io);
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

/** Runs the CLI and returns the exit code; never throws. */
export async function runCli(argv: readonly string[], io: Io = processIo): Promise<number> {
  const json = argv.includes('--json');
  const fail = (code: number, message: string, extra: Record<string, unknown> = {}): number => {
    io.err(`error: ${message}\n`);
    if (json) io.out(`${JSON.stringify({ error: { message, ...extra } }, null, 2)}\n`);
    return code;
  };
  try {
    await createProgram(io).parseAsync(argv, { from: 'user' });
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
    if (error instanceof UsageError) return fail(EXIT.usage, error.message);
    if (error instanceof ConfigError) {
      io.err(`error: invalid configuration (${error.source}):\n${error.problems.map((line) => `  ${line}\n`).join('')}`);
      if (json) io.out(`${JSON.stringify({ error: { message: 'invalid configuration', problems: error.problems } }, null, 2)}\n`);
      return EXIT.failure;
    }
    if (error instanceof CliError) return fail(EXIT.failure, error.message, error.status === undefined ? {} : { status: error.status });
    if (error instanceof MigrationError) return fail(EXIT.failure, error.message);
    return fail(EXIT.failure, error instanceof Error ? error.message : String(error));
  }
}

export async function main(): Promise<void> {
  const code = await runCli(process.argv.slice(2));
  // Let stdout drain before exiting (a pipe may still hold the JSON document).
  process.stdout.write('', () => process.exit(code));
}
