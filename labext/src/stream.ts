// The server extension's WebSocket, open while anyone watches (the panel, the status-bar item)
// and the page is visible: every message goes to all of them. Nobody subscribed, or the page
// hidden: the socket is closed, so the server samples nothing for this tab.

import type { ICounterInfo } from "./protocol";
import type { IKernelCounters, IKernelsReply } from "./kernels";

export type Listener = (reply: IKernelsReply | null, error: string | null) => void;

/** Open a socket with this query string; returns how to close it (without a close callback). */
export type Connect = (
  query: string,
  onMessage: (data: string) => void,
  onClose: (code: number, reason: string) => void,
) => { close(): void };

/** A message as the server sends it: a kernel's series only when they are new to this socket,
 * or the one sentence that says why the server refuses this socket's query. */
type Wire =
  | (IKernelsReply & { kernels: (IKernelCounters & { series?: ICounterInfo[] })[] })
  | {
      error: string;
    };

/** What of the page's server settings the stream's URL needs (ServerConnection.ISettings). */
export interface IStreamSettings {
  readonly wsUrl: string;
  readonly token: string;
  readonly appendToken: boolean;
}

/** The stream's URL for this query. The token goes into it only where the page config's
 * `appendToken` says so, as in JupyterLab's own sockets (a socket to another host); otherwise
 * the browser's login cookie authenticates the socket, and no credential lands in the request
 * lines that proxies log. */
export function streamUrl(settings: IStreamSettings, query: string): string {
  const url = `${settings.wsUrl}pagelab/kernels/stream?${query}`;
  if (!settings.appendToken || !settings.token) return url;
  return `${url}&token=${encodeURIComponent(settings.token)}`;
}

const RETRY_MS = 2000; // after the server went away (restarted, network): try again

export class KernelStream {
  private readonly listeners = new Set<Listener>();
  private socket: { close(): void } | null = null;
  private retry: ReturnType<typeof setTimeout> | null = null;
  private interval = 100;
  private eventNames: string[] = [];
  private hidden = false;
  /** The server's sentence for a query it refuses: no retry until the settings change. */
  private refused: string | null = null;
  /** Each kernel's series on this socket (the server leaves them out while unchanged). */
  private readonly series = new Map<string, ICounterInfo[]>();

  constructor(
    private readonly connect: Connect,
    private readonly later: (cb: () => void, ms: number) => ReturnType<typeof setTimeout> = (
      cb,
      ms,
    ) => setTimeout(cb, ms),
  ) {}

  /** Refresh interval and events; reconnects if anyone listens. */
  configure(intervalMs: number, events: string[]): void {
    this.interval = intervalMs;
    this.eventNames = events;
    this.refused = null;
    this.close();
    this.resume();
  }

  /** Stop while the page is hidden, go on when it is shown (document.visibilityState). */
  setHidden(hidden: boolean): void {
    this.hidden = hidden;
    if (hidden) this.close();
    else this.resume();
  }

  /** Start listening (the socket opens with the first listener); returns the unsubscribe. */
  subscribe(listener: Listener): () => void {
    this.listeners.add(listener);
    if (this.refused !== null) listener(null, this.refused);
    this.resume();
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

  private resume(): void {
    const wanted = this.listeners.size > 0 && !this.hidden && this.refused === null;
    if (wanted && !this.socket && this.retry === null) this.open();
  }

  private tell(reply: IKernelsReply | null, error: string | null): void {
    for (const l of [...this.listeners]) l(reply, error);
  }

  private open(): void {
    this.series.clear();
    this.socket = this.connect(
      this.query(),
      (data) => this.receive(data),
      (code, reason) => {
        this.socket = null;
        if (code >= 4000 && code < 5000) {
          // the server refused the query and said why (4400, 4403): retrying cannot help
          if (this.refused === null) {
            this.refused = reason || `the server refused the counter stream (${code})`;
            this.tell(null, this.refused);
          }
          return;
        }
        this.tell(null, `the counter stream closed (${code})`);
        this.retry = this.later(() => {
          this.retry = null;
          this.resume();
        }, RETRY_MS);
      },
    );
  }

  private receive(data: string): void {
    const msg = JSON.parse(data) as Wire;
    if ("error" in msg) {
      this.refused = msg.error;
      this.tell(null, msg.error);
      return;
    }
    for (const k of msg.kernels) {
      if (k.series) this.series.set(k.id, k.series);
      else k.series = this.series.get(k.id) ?? [];
    }
    this.tell(msg as IKernelsReply, null);
  }

  private close(): void {
    this.socket?.close();
    this.socket = null;
    if (this.retry !== null) clearTimeout(this.retry);
    this.retry = null;
  }
}
