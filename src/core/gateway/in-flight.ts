/**
 * Admitted calls not yet settled, so that shutdown can wait for them: at shutdown, streams
 * the server cut settle (as 499) after their connections close, and settlement must take them.
 */
export class InFlight {
  private open = 0;
  private idle: Array<() => void> = [];

  enter(): void {
    this.open += 1;
  }

  leave(): void {
    this.open -= 1;
    if (this.open === 0) for (const wake of this.idle.splice(0)) wake();
  }

  /** Resolves once every admitted call has settled, or after `timeoutMs`. */
  settled(timeoutMs: number): Promise<void> {
    if (this.open === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, timeoutMs);
      timer.unref();
      this.idle.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }
}
