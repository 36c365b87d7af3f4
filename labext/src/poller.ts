// Polls the server extension while anyone watches (the panel, the status-bar item) and hands
// every reply to all of them. Nobody subscribed: no requests, so the server stops sampling.

import { latest, type KernelsReply } from "./kernels";

/** GET pagelab/kernels with this query string; rejects on a failed request. */
export type Fetch = (query: string) => Promise<KernelsReply>;
export type Listener = (reply: KernelsReply | null, error: string | null) => void;

export class Poller {
  /** Milliseconds between polls, which is also the sampling interval asked of the server. */
  intervalMs = 100;
  /** Events asked for; empty: the server's defaults. */
  events: string[] = [];
  private readonly listeners = new Set<Listener>();
  private timer: ReturnType<typeof setTimeout> | null = null;
  private since: number | null = null;
  private busy = false;

  constructor(
    private readonly fetch: Fetch,
    private readonly schedule: (cb: () => void, ms: number) => ReturnType<typeof setTimeout> = (
      cb,
      ms,
    ) => setTimeout(cb, ms),
  ) {}

  /** Start listening (polling begins with the first listener); returns the unsubscribe. */
  subscribe(listener: Listener): () => void {
    this.listeners.add(listener);
    if (this.timer === null && !this.busy) void this.tick();
    return () => {
      this.listeners.delete(listener);
      if (this.listeners.size === 0 && this.timer !== null) {
        clearTimeout(this.timer);
        this.timer = null;
      }
    };
  }

  get polling(): boolean {
    return this.timer !== null || this.busy;
  }

  /** The query string of the next poll. */
  query(): string {
    const q = new URLSearchParams({ interval_ms: String(Math.round(this.intervalMs)) });
    if (this.events.length) q.set("events", this.events.join(","));
    if (this.since !== null) q.set("since", String(this.since));
    return q.toString();
  }

  private async tick(): Promise<void> {
    this.timer = null;
    this.busy = true;
    let reply: KernelsReply | null = null;
    let error: string | null = null;
    try {
      reply = await this.fetch(this.query());
      this.since = latest(reply) ?? this.since;
    } catch (e) {
      error = e instanceof Error ? e.message : String(e);
    }
    this.busy = false;
    for (const l of [...this.listeners]) l(reply, error);
    if (this.listeners.size) this.timer = this.schedule(() => void this.tick(), this.intervalMs);
  }
}
