import { spawn } from 'node:child_process';
import type { TargetCheck } from './report.js';

/**
 * What metrics and traces cost a chat JSON call (issue 31), by interleaved A/B: probe.ts runs
 * this checkout's daemon twice side by side, the default one (metrics on, traces off) as the
 * base and one with a setting changed (METRICS=off, or TRACES=on at 100% sampling to a
 * collector that answers at once), in alternating order per round, and prints each round's
 * CPU per call; the figure is the median of per-round ratios.
 */

export interface AbResult {
  /** What the other daemon had changed. */
  variant: 'metrics off' | 'traces on (100%)';
  /** Per round: the variant's CPU per call ÷ the default daemon's. */
  rounds: number[];
  median: number;
  /** The default daemon's CPU per call, median over rounds (µs). */
  baseUs: number;
}

const ROOT = new URL('../../', import.meta.url).pathname;

export async function telemetryAb(rounds: number, say: (line: string) => void): Promise<AbResult[]> {
  const out: AbResult[] = [];
  for (const [variant, env] of [
    ['metrics off', { METRICS: 'off' }],
    ['traces on (100%)', { TRACES: 'on' }],
  ] as const) {
    say(`telemetry A/B: ${variant} against the default daemon (${rounds} interleaved rounds, test/bench/probe.ts)`);
    out.push(await probe(variant, { ...env, BASE: '.', ROUNDS: String(rounds) }));
  }
  return out;
}

function probe(variant: AbResult['variant'], env: Record<string, string>): Promise<AbResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'test/bench/probe.ts'], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
    let text = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => (text += chunk));
    child.once('error', reject);
    child.once('exit', (code) => {
      const rounds: number[] = [];
      const bases: number[] = [];
      for (const line of text.split('\n')) {
        const gateway = /\bgateway (\d+) \(/.exec(line);
        const base = /\bbase (\d+) \(/.exec(line);
        if (gateway && base) {
          rounds.push(Number(gateway[1]) / Number(base[1]));
          bases.push(Number(base[1]));
        }
      }
      if (code !== 0 || rounds.length === 0) {
        reject(new Error(`probe.ts (${variant}) failed: exit code ${code}`));
        return;
      }
      resolve({ variant, rounds, median: median(rounds), baseUs: median(bases) });
    });
  });
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

/** Issue 31's limits: metrics on within +3% of off; traces at 100% within +10% of off. */
export function telemetryChecks(results: readonly AbResult[]): TargetCheck[] {
  const checks: TargetCheck[] = [];
  for (const r of results) {
    const spread = `rounds ${Math.min(...r.rounds).toFixed(3)}–${Math.max(...r.rounds).toFixed(3)}`;
    if (r.variant === 'metrics off') {
      // The variant is "off": the cost of "on" is base ÷ variant.
      const cost = 1 / r.median;
      checks.push({ name: 'metrics on: CPU/call ÷ metrics off (chat JSON, interleaved A/B, median of rounds)', value: `${cost.toFixed(3)}x (${spread} off÷on)`, limit: '≤ 1.03x', pass: cost <= 1.03 });
    } else {
      checks.push({ name: 'traces at 100%: CPU/call ÷ traces off (chat JSON, interleaved A/B, median of rounds)', value: `${r.median.toFixed(3)}x (${spread})`, limit: '≤ 1.10x', pass: r.median <= 1.1 });
    }
  }
  return checks;
}
