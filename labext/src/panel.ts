// The kernel panel's content: one LiveView per running kernel of the user, fed by the stream's
// replies. Plain DOM (no Lumino), so the specs can drive it; labplugin.ts puts it in the side bar.

import { plain, type ITrans } from "./i18n";
import { sameSeries, toBatch, type IKernelsReply } from "./kernels";
import type { ICounterInfo } from "./protocol";
import { LiveView } from "./view";

interface IEntry {
  view: LiveView;
  series: ICounterInfo[];
}

export class KernelList {
  readonly root: HTMLElement;
  private readonly status: HTMLElement;
  private readonly list: HTMLElement;
  private readonly entries = new Map<string, IEntry>();

  constructor(private readonly trans: ITrans = plain) {
    this.root = document.createElement("div");
    this.root.className = "pagelab-panel";
    this.root.dataset.pagelab = "kernel-panel";
    this.root.setAttribute("role", "region");
    this.root.setAttribute("aria-label", trans.__("pagelab kernel counters"));
    this.status = document.createElement("div");
    this.status.className = "pl-panel-status";
    this.status.dataset.pagelab = "panel-status";
    this.status.setAttribute("role", "status");
    this.list = document.createElement("div");
    this.root.append(this.status, this.list);
  }

  /** Take in one reply: add, rebuild or drop views, and feed them the new samples. */
  update(reply: IKernelsReply | null, error: string | null): void {
    const t = this.trans;
    if (reply === null) {
      this.status.textContent = t.__(
        "pagelab: cannot read kernel counters (%1)",
        error ?? t.__("no reply"),
      );
      return;
    }
    const seen = new Set<string>();
    for (const k of reply.kernels) {
      seen.add(k.id);
      let entry = this.entries.get(k.id);
      if (!entry || !sameSeries(entry.series, k.series)) {
        entry?.view.root.remove();
        const view = new LiveView({ trans: this.trans });
        view.root.dataset.pagelab = "kernel";
        view.root.dataset.kernel = k.id;
        view.setCounters(k.series);
        entry = { view, series: k.series };
        this.entries.set(k.id, entry);
        this.list.append(view.root);
      }
      entry.view.setTitle(t.__("%1 kernel, pid %2", k.name, k.pid));
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
      ? t._n(
          "%1 kernel, sampled every %2 ms (pagelab %3)",
          "%1 kernels, sampled every %2 ms (pagelab %3)",
          n,
          reply.interval_ms,
          reply.version,
        )
      : t.__("none of your kernels is running");
    const failed = reply.sampling_error ? t.__("pagelab: %1", reply.sampling_error) : "";
    const text = [failed || state, reply.note].filter(Boolean).join("; ");
    // a live region: only a change is announced
    if (this.status.textContent !== text) this.status.textContent = text;
  }

  /** Redraw every view's figures and charts. */
  draw(): void {
    for (const e of this.entries.values()) e.view.draw();
  }

  view(kernelId: string): LiveView | undefined {
    return this.entries.get(kernelId)?.view;
  }
}
