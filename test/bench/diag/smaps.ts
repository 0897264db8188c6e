import { readFileSync } from 'node:fs';

/**
 * A process's resident memory by mapping, MB: a file by its path, anonymous mappings by their
 * size (a 64 MB one is a malloc arena, under 1.1 MB V8's pages and other small mappings).
 */
export function residentByMapping(pid: number): Array<[string, number]> {
  const resident = new Map<string, number>();
  let mapping = '';
  for (const line of readFileSync(`/proc/${pid}/smaps`, 'utf8').split('\n')) {
    const head = /^([0-9a-f]+)-([0-9a-f]+) \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (head) {
      const mb = (parseInt(head[2] as string, 16) - parseInt(head[1] as string, 16)) / 2 ** 20;
      mapping = head[3] || (mb >= 60 && mb <= 66 ? '[anon: malloc arena]' : mb < 1.1 ? '[anon: small mappings, V8 pages among them]' : `[anon: ${mb.toFixed(0)} MB mapping]`);
    } else if (line.startsWith('Rss:')) resident.set(mapping, (resident.get(mapping) ?? 0) + Number(line.split(/\s+/)[1]) / 1024);
  }
  return [...resident].sort((a, b) => b[1] - a[1]);
}

/** The largest `top` mappings, one per line. */
export function formatResident(pid: number, top = 14): string {
  return residentByMapping(pid)
    .slice(0, top)
    .map(([name, size]) => `  ${size.toFixed(1).padStart(6)} MB  ${name}`)
    .join('\n');
}
