// The status-bar text for the current notebook's kernel: its page-fault rate and its RSS.

import { formatKiB, formatRate } from "./format";
import { History } from "./history";
import { plain, type ITrans } from "./i18n";
import { lastValue, type IKernelsReply } from "./kernels";

export class KernelStatus {
  private kernelId: string | null = null;
  private readonly faults = new History();
  private rss: number | null = null;
  private source = "";

  constructor(private readonly trans: ITrans = plain) {}

  /** Follow another kernel (or none): its history starts afresh. */
  follow(kernelId: string | null): void {
    if (kernelId === this.kernelId) return;
    this.kernelId = kernelId;
    this.faults.clear();
    this.rss = null;
    this.source = "";
  }

  update(reply: IKernelsReply | null): void {
    const k = reply?.kernels.find((x) => x.id === this.kernelId);
    if (!k) return;
    const i = k.series.findIndex((s) => s.name === "page-faults");
    if (i >= 0) {
      this.source = k.series[i].reason ? "" : k.series[i].source;
      for (const row of k.samples) this.faults.push(row[0] ?? Number.NaN, row[1 + i] ?? Number.NaN);
    }
    this.rss = lastValue(k, "rss") ?? this.rss;
  }

  /** "faults 1.2k/s (sw) · RSS 85.3 MiB", or "" when there is no kernel to show. */
  text(): string {
    if (this.kernelId === null) return "";
    const t = this.trans;
    const faults = this.source
      ? t.__("faults %1 (%2)", formatRate(this.faults.rate), this.source)
      : t.__("faults n/a");
    return t.__("%1 · RSS %2", faults, formatKiB(this.rss));
  }
}
