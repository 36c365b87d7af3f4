// Draw at most once per animation frame and at most `maxFps` times a second, however fast the
// samples arrive: the kernel may batch or burst, the screen should not stutter.

export type Scheduler = (cb: () => void) => void;

const defaultScheduler: Scheduler = (cb) =>
  typeof requestAnimationFrame === "function"
    ? requestAnimationFrame(() => cb())
    : setTimeout(cb, 16);

export class Throttle {
  private pending = false;
  private last = -Infinity;

  constructor(
    private readonly draw: () => void,
    private readonly maxFps = 30,
    private readonly schedule: Scheduler = defaultScheduler,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Ask for a draw; many requests before the next frame collapse into one. */
  request(): void {
    if (this.pending) return;
    this.pending = true;
    this.schedule(() => this.tick());
  }

  private tick(): void {
    const t = this.now();
    if (t - this.last < 1000 / this.maxFps - 1) {
      this.schedule(() => this.tick()); // too soon: wait for a later frame
      return;
    }
    this.pending = false;
    this.last = t;
    this.draw();
  }
}
