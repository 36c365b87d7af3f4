// The server extension's WebSocket, open while anyone watches (the panel, the status-bar item):
// every message, one per sampling tick, goes to all of them. Nobody subscribed: the socket is
// closed, so the server stops sampling.

import type { KernelsReply } from "./kernels";

export type Listener = (reply: KernelsReply | null, error: string | null) => void;

/** Open a socket with this query string; returns how to close it (without a close callback). */
export type Connect = (
  query: string,
  onMessage: (data: string) => void,
  onClose: (why: string) => void,
) => { close(): void };

const RETRY_MS = 2000; // after the server went away (restarted, network): try again

export class KernelStream {
  private readonly listeners = new Set<Listener>();
  private socket: { close(): void } | null = null;
  private retry: ReturnType<typeof setTimeout> | null = null;
  private interval = 100;
  private eventNames: string[] = [];

  constructor(
    private readonly connect: Connect,
    private readonly later: (cb: () => void, ms: number) => ReturnType<typeof setTimeout> = (
      cb,
      ms,
    ) => setTimeout(cb, ms),
  ) {}

  /** Refresh interval (also the server's sampling interval) and events; reconnects if open. */
  configure(intervalMs: number, events: string[]): void {
    this.interval = intervalMs;
    this.eventNames = events;
    if (this.socket) {
      this.close();
      this.open();
    }
  }

  /** Start listening (the socket opens with the first listener); returns the unsubscribe. */
  subscribe(listener: Listener): () => void {
    this.listeners.add(listener);
    if (!this.socket && this.retry === null) this.open();
    return () => {
      this.listeners.delete(listener);
      if (this.listeners.size === 0) this.close();
    };
  }

  get connected(): boolean {
    return this.socket !== null;
  }

  /** The query string the socket opens with. */
  query(): string {
    const q = new URLSearchParams({ interval_ms: String(Math.round(this.interval)) });
    if (this.eventNames.length) q.set("events", this.eventNames.join(","));
    return q.toString();
  }

  private open(): void {
    this.socket = this.connect(
      this.query(),
      (data) => {
        const reply = JSON.parse(data) as KernelsReply;
        for (const l of [...this.listeners]) l(reply, null);
      },
      (why) => {
        this.socket = null;
        for (const l of [...this.listeners]) l(null, why);
        if (this.listeners.size)
          this.retry = this.later(() => {
            this.retry = null;
            if (this.listeners.size && !this.socket) this.open();
          }, RETRY_MS);
      },
    );
  }

  private close(): void {
    this.socket?.close();
    this.socket = null;
    if (this.retry !== null) clearTimeout(this.retry);
    this.retry = null;
  }
}
