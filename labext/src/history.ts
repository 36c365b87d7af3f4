// Per-counter history: the running total, and the points a chart draws over the last WINDOW_S
// seconds: a count's rate between consecutive samples, or a level's value. Bounded in time and
// in points, so a view left open for hours uses constant memory.

export const WINDOW_S = 10; // seconds a chart shows
export const MAX_POINTS = 600; // 60 per second: more than the 30 Hz a sampler sends

export class History {
  /** When each point was taken (s, the sampler's clock) and its value (per second for a count). */
  readonly times: number[] = [];
  readonly points: number[] = [];
  private lastTime: number | null = null;
  private lastValue: number | null = null;

  /** ``level``: chart the values as they are (e.g. RSS), not their rate. */
  constructor(readonly level = false) {}

  /** Add one sample (time in s, value or NaN when the counter could not be read). */
  push(time: number, value: number): void {
    if (!Number.isFinite(value)) return;
    if (this.level) {
      this.add(time, value);
    } else if (this.lastValue !== null && this.lastTime !== null && time > this.lastTime) {
      this.add(time, rate(this.lastTime, this.lastValue, time, value));
    }
    this.lastTime = time;
    this.lastValue = value;
  }

  private add(time: number, y: number): void {
    this.times.push(time);
    this.points.push(y);
    let old = 0;
    while (old < this.times.length && this.times[old] < time - WINDOW_S) old++;
    old = Math.max(old, this.times.length - MAX_POINTS);
    if (old > 0) {
      this.times.splice(0, old);
      this.points.splice(0, old);
    }
  }

  /** The last readable value (a count's total, a level's value), or null. */
  get total(): number | null {
    return this.lastValue;
  }

  /** The newest point (a count's latest rate per second), or null before there is one. */
  get rate(): number | null {
    return this.points.length ? this.points[this.points.length - 1] : null;
  }

  /** Time of the newest sample, or null. */
  get now(): number | null {
    return this.lastTime;
  }

  clear(): void {
    this.times.length = 0;
    this.points.length = 0;
    this.lastTime = null;
    this.lastValue = null;
  }
}

/** Change per second between two samples; a counter that went backwards (reset) counts as 0. */
export function rate(t0: number, v0: number, t1: number, v1: number): number {
  if (t1 <= t0) return 0;
  return Math.max(0, v1 - v0) / (t1 - t0);
}
