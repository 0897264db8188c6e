/** Where a command writes: stdout/stderr in the real CLI, buffers in tests. No UI code here: `gateway serve` loads this. */

export interface Io {
  out(text: string): void;
  err(text: string): void;
  columns: number;
  env: NodeJS.ProcessEnv;
  /** stdout is a terminal: live views redraw; otherwise output is line by line. */
  interactive: boolean;
}

export const processIo: Io = {
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text),
  columns: process.stdout.columns || 120,
  env: process.env,
  interactive: process.stdout.isTTY === true,
};
