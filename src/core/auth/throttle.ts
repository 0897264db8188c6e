/**
 * Counts failures per subject (an email, a client address) in a fixed window that starts at
 * the first failure; past `maxFailures` the subject is refused until the window ends.
 * In memory: a restart forgets, which only ever helps a legitimate user.
 */
export class FailureThrottle {
  private readonly entries = new Map<string, { count: number; resetAt: number }>();

  constructor(
    private readonly maxFailures: number,
    private readonly windowMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Seconds until the subject may try again, or 0 when it may try now. */
  retryAfter(subject: string): number {
    const entry = this.entries.get(subject);
    if (!entry) return 0;
    const now = this.now();
    if (entry.resetAt <= now) {
      this.entries.delete(subject);
      return 0;
    }
    return entry.count >= this.maxFailures ? Math.ceil((entry.resetAt - now) / 1000) : 0;
  }

  fail(subject: string): void {
    const now = this.now();
    const entry = this.entries.get(subject);
    if (!entry || entry.resetAt <= now) {
      this.sweep(now);
      this.entries.set(subject, { count: 1, resetAt: now + this.windowMs });
    } else entry.count += 1;
  }

  succeed(subject: string): void {
    this.entries.delete(subject);
  }

  private sweep(now: number): void {
    if (this.entries.size < 10_000) return;
    for (const [subject, entry] of this.entries) if (entry.resetAt <= now) this.entries.delete(subject);
  }
}
