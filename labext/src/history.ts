// Per-counter history: the running total and the rates between consecutive samples, kept in a
// bounded window so a widget left open for hours uses constant memory.

export const WINDOW = 120; // samples kept per counter: 4 s at 30 Hz, 2 min at 1 Hz

export class History {
  readonly totals: (number | null)[] = [];
  readonly rates: number[] = [];
  private lastTime: number | null = null;
  private lastValue: number | null = null;

  /** Add one sample (time in s, value or NaN when the counter could not be read). */
  push(time: number, value: number): void {
    const known = Number.isFinite(value);
    if (known && this.lastValue !== null && this.lastTime !== null && time > this.lastTime) {
      this.rates.push(rate(this.lastTime, this.lastValue, time, value));
      if (this.rates.length > WINDOW) this.rates.shift();
    }
    this.totals.push(known ? value : null);
    if (this.totals.length > WINDOW) this.totals.shift();
    if (known) {
      this.lastTime = time;
      this.lastValue = value;
    }
  }

  get total(): number | null {
    return this.lastValue;
  }

  /** The latest rate per second, or null before two readable samples. */
  get rate(): number | null {
    return this.rates.length ? this.rates[this.rates.length - 1] : null;
  }

  clear(): void {
    this.totals.length = 0;
    this.rates.length = 0;
    this.lastTime = null;
    this.lastValue = null;
  }
}

/** Change per second between two samples; a counter that went backwards (reset) counts as 0. */
export function rate(t0: number, v0: number, t1: number, v1: number): number {
  if (t1 <= t0) return 0;
  return Math.max(0, v1 - v0) / (t1 - t0);
}
