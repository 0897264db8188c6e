import { Pool } from 'undici';
import { median, percentile } from './load.js';
import { cpuMicros } from './procs.js';

/**
 * The dashboard's paths through the gateway (issue 17: no regression on them): its page, its
 * script, and the JSON it loads for a signed-in admin (a session token from /api/auth/login),
 * each in a closed loop. Run after the load workloads, so /api/usage and the overview read a
 * usage table of the run's calls, as a busy deployment's would be.
 */

export interface DashboardPathResult {
  path: string;
  requests: number;
  rps: number;
  p50Ms: number;
  p99Ms: number;
  cpuUsPerReq: number;
  bytes: number;
  failed: number;
}

export async function dashboardPaths(url: string, pid: number, login: { email: string; password: string }, options: { concurrency: number; durationMs: number }): Promise<DashboardPathResult[]> {
  const pool = new Pool(url, { connections: options.concurrency });
  try {
    const session = await pool.request({ method: 'POST', path: '/api/auth/login', headers: { 'content-type': 'application/json' }, body: JSON.stringify(login) });
    const { token } = (await session.body.json()) as { token: string };
    if (!token) throw new Error('dashboard: login returned no token');
    const page = await pool.request({ method: 'GET', path: '/overview', headers: { accept: 'text/html' } });
    const html = await page.body.text();
    const script = /src="(\/assets\/[^"]+\.js)"/.exec(html)?.[1];
    if (!script) throw new Error('dashboard: the page names no script');
    const auth = { authorization: `Bearer ${token}` };
    const paths: Array<{ path: string; headers: Record<string, string> }> = [
      { path: '/overview', headers: { accept: 'text/html' } },
      { path: script, headers: { 'accept-encoding': 'gzip' } },
      { path: '/api/auth/me', headers: auth },
      { path: '/api/dashboard/overview', headers: auth },
      { path: '/api/usage?limit=50', headers: auth },
      { path: '/api/admin/usage?limit=50', headers: auth },
    ];
    const results: DashboardPathResult[] = [];
    for (const p of paths) {
      const latencies: number[] = [];
      let failed = 0;
      let bytes = 0;
      // A short warm-up, then the measured loop.
      const loop = async (until: number, record: boolean): Promise<void> => {
        while (performance.now() < until) {
          const t0 = performance.now();
          try {
            const res = await pool.request({ method: 'GET', path: p.path, headers: p.headers });
            const body = Buffer.from(await res.body.arrayBuffer());
            if (res.statusCode !== 200) throw new Error(String(res.statusCode));
            if (record) bytes = body.length;
          } catch {
            if (record) failed += 1;
            continue;
          }
          if (record) latencies.push(performance.now() - t0);
        }
      };
      const warmUntil = performance.now() + 300;
      await Promise.all(Array.from({ length: options.concurrency }, () => loop(warmUntil, false)));
      const cpu0 = cpuMicros(pid);
      const started = performance.now();
      const until = started + options.durationMs;
      await Promise.all(Array.from({ length: options.concurrency }, () => loop(until, true)));
      const elapsed = performance.now() - started;
      const cpu = cpuMicros(pid) - cpu0;
      latencies.sort((a, b) => a - b);
      results.push({
        path: p.path.startsWith('/assets/') ? '/assets/app-….js (gzip)' : p.path,
        requests: latencies.length,
        rps: (latencies.length * 1000) / elapsed,
        p50Ms: median(latencies),
        p99Ms: percentile(latencies, 0.99),
        cpuUsPerReq: cpu / Math.max(1, latencies.length),
        bytes,
        failed,
      });
    }
    return results;
  } finally {
    await pool.close();
  }
}
