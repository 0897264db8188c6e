/** A database whose schema this gateway cannot use (newer than it knows, or a failed migration). No imports: the CLI loads this up front. */
export class MigrationError extends Error {
  override name = 'MigrationError';
}
