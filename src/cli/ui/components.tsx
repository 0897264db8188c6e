import { Box, Text } from 'ink';

/** Dumb Ink components: props in, no I/O. */

export interface Column<Row> {
  title: string;
  value: (row: Row) => string;
  align?: 'left' | 'right';
}

/**
 * `whole`: as wide as its rows even past the terminal's width, so that a row is never broken
 * into two lines (the terminal soft-wraps it; a pipe gets one line per row). Only for output
 * rendered once: a live view must fit the terminal to redraw in place.
 */
export function Table<Row>({ columns, rows, empty = 'nothing to show', whole = false }: { columns: Column<Row>[]; rows: Row[]; empty?: string; whole?: boolean }) {
  if (rows.length === 0) return <Text dimColor>{empty}</Text>;
  const cells = rows.map((row) => columns.map((column) => column.value(row)));
  const widths = columns.map((column, i) => Math.max(column.title.length, ...cells.map((line) => (line[i] ?? '').length)));
  const pad = (text: string, i: number): string => {
    const width = widths[i] ?? 0;
    return columns[i]?.align === 'right' ? text.padStart(width) : text.padEnd(width);
  };
  const width = widths.reduce((sum, w) => sum + w, 0) + 2 * (widths.length - 1);
  return (
    <Box flexDirection="column" {...(whole ? { width } : {})}>
      <Text bold>{columns.map((column, i) => pad(column.title, i)).join('  ')}</Text>
      {cells.map((line, index) => (
        <Text key={index}>{line.map((cell, i) => pad(cell, i)).join('  ')}</Text>
      ))}
    </Box>
  );
}

export function Details({ title, entries }: { title?: string; entries: [string, string][] }) {
  const width = Math.max(...entries.map(([label]) => label.length));
  return (
    <Box flexDirection="column">
      {title ? <Text bold>{title}</Text> : null}
      {entries.map(([label, value]) => (
        <Text key={label}>
          <Text dimColor>{label.padEnd(width)}</Text>  {value}
        </Text>
      ))}
    </Box>
  );
}

/** A new secret, shown once, with the warning that it will not be shown again. */
export function SecretReveal({ label, secret, entries }: { label: string; secret: string; entries: [string, string][] }) {
  return (
    <Box flexDirection="column">
      <Box borderStyle="round" borderColor="yellow" flexDirection="column" paddingX={1}>
        <Text bold>{label}</Text>
        <Text color="green">{secret}</Text>
        <Text color="yellow">Store it now: it is shown only this once and cannot be recovered.</Text>
      </Box>
      <Details entries={entries} />
    </Box>
  );
}

export function Success({ message }: { message: string }) {
  return <Text color="green">✔ {message}</Text>;
}
