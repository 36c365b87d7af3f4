// The kernel panel's content: one LiveView per running kernel of the user, fed by poll replies.
// Plain DOM (no Lumino), so the specs can drive it; labplugin.ts puts it in the side bar.

import { sameSeries, toBatch, type KernelsReply } from "./kernels";
import type { CounterInfo } from "./protocol";
import { LiveView } from "./view";

interface Entry {
  view: LiveView;
  series: CounterInfo[];
}

export class KernelList {
  readonly root: HTMLElement;
  private readonly status: HTMLElement;
  private readonly list: HTMLElement;
  private readonly entries = new Map<string, Entry>();

  constructor(private readonly version: string) {
    this.root = document.createElement("div");
    this.root.className = "pagelab-panel";
    this.root.dataset.pagelab = "kernel-panel";
    this.status = document.createElement("div");
    this.status.className = "pl-panel-status";
    this.status.dataset.pagelab = "panel-status";
    this.list = document.createElement("div");
    this.root.append(this.status, this.list);
  }

  /** Take in one poll: add, rebuild or drop views, and feed them the new samples. */
  update(reply: KernelsReply | null, error: string | null): void {
    if (reply === null) {
      this.status.textContent = `pagelab: cannot read kernel counters (${error ?? "no reply"})`;
      return;
    }
    const seen = new Set<string>();
    for (const k of reply.kernels) {
      seen.add(k.id);
      let entry = this.entries.get(k.id);
      if (!entry || !sameSeries(entry.series, k.series)) {
        entry?.view.root.remove();
        const view = new LiveView(null, this.version);
        view.root.dataset.pagelab = "kernel";
        view.root.dataset.kernel = k.id;
        view.setCounters(k.series);
        entry = { view, series: k.series };
        this.entries.set(k.id, entry);
        this.list.append(view.root);
      }
      entry.view.setTarget(`${k.name} kernel, pid ${k.pid}`);
      entry.view.setRunning(true);
      entry.view.add(toBatch(k));
    }
    for (const [id, entry] of this.entries) {
      if (!seen.has(id)) {
        entry.view.root.remove();
        this.entries.delete(id);
      }
    }
    const n = reply.kernels.length;
    const state = n
      ? `${n} kernel${n > 1 ? "s" : ""}, sampled every ${reply.interval_ms} ms (pagelab ${reply.version})`
      : "none of your kernels is running";
    const failed = reply.sampling_error ? `pagelab: ${reply.sampling_error}` : "";
    this.status.textContent = [failed || state, reply.note].filter(Boolean).join("; ");
  }

  /** Redraw every view's totals, rates and sparklines. */
  draw(): void {
    for (const e of this.entries.values()) e.view.draw();
  }

  view(kernelId: string): LiveView | undefined {
    return this.entries.get(kernelId)?.view;
  }
}
