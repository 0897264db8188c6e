/** A configuration that cannot run, with a path-precise line per problem. No imports: the CLI loads this before anything else. */
export class ConfigError extends Error {
  constructor(
    readonly source: string,
    readonly problems: readonly string[],
  ) {
    super(`invalid configuration (${source}):\n${problems.map((line) => `  ${line}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}
