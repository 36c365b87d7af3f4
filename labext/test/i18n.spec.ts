import { describe, expect, it } from "vitest";
import { describe as describeAutocount } from "../src/autocount";
import { Controls } from "../src/controls";
import { plain } from "../src/i18n";
import type { IKernelsReply } from "../src/kernels";
import { KernelList } from "../src/panel";
import { KernelStatus } from "../src/statusitem";
import { LiveView } from "../src/view";

/** A bundle like JupyterLab's (methods that need their object) that marks every message. */
class Marked {
  private readonly open = "«";
  __(msgid: string, ...args: unknown[]): string {
    return this.open + plain.__(msgid, ...args) + "»";
  }
  _n(msgid: string, plural: string, n: number, ...args: unknown[]): string {
    return this.open + plain._n(msgid, plural, n, ...args) + "»";
  }
}

// a formatted number with its unit ("2,100", "3k/s", "50% CPU", "4 MiB", "n/a"): data, not words
const NUMBER = /^(n\/a|–|-?[\d.,]+ ?[kMGT]?(\/s|% CPU| [KMGT]iB| ms| s)?)$/;

/** Text nodes that are neither a message nor kernel data (names, sources, numbers). */
function untranslated(root: HTMLElement, data: string[]): string[] {
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const out: string[] = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const text = n.textContent!.trim();
    if (!text || data.includes(text) || NUMBER.test(text)) continue;
    if (!(text.startsWith("«") && text.endsWith("»"))) out.push(text);
  }
  return out;
}

describe("plain", () => {
  it("fills placeholders as gettext does, the count first in plurals", () => {
    expect(plain.__("%1 of %2", "a", "b")).toBe("a of b");
    expect(plain._n("%1 kernel", "%1 kernels", 1)).toBe("1 kernel");
    expect(plain._n("%1 kernel at %2", "%1 kernels at %2", 3, "x")).toBe("3 kernels at x");
  });
});

describe("translation", () => {
  it("reaches every string the panel, the widget and the status bar show", () => {
    const t = new Marked();
    const series = [
      { name: "page-faults", unit: "", source: "sw", reason: "", note: "" },
      { name: "dTLB-load-misses", unit: "", source: "hw", reason: "no PMU", note: "" },
      { name: "rss", unit: "KiB", source: "rusage", reason: "", note: "VmRSS" },
    ];
    const reply: IKernelsReply = {
      version: "0.0.0",
      now: 1,
      interval_ms: 100,
      sampling_error: null,
      note: "",
      kernels: [
        {
          id: "a",
          name: "python3",
          pid: 42,
          execution_state: "idle",
          series,
          samples: [
            [0, 10, null, 2048],
            [1, 20, null, 4096],
          ],
        },
      ],
    };
    const list = new KernelList(t);
    list.update(reply, null);
    list.draw();
    const data = ["page-faults", "dTLB-load-misses", "rss", "sw", "hw", "rusage", "VmRSS"];
    expect(untranslated(list.root, data)).toEqual([]);
    const chart = list.root.querySelector(".pl-chart")!;
    expect(chart.getAttribute("aria-label")).toMatch(/^«.*»$/);

    const controls = new Controls(() => {}, t);
    const view = new LiveView({ trans: t, version: "0.0.0", controls: controls.node });
    view.setCounters(series);
    view.setTarget("pid 42");
    view.setRunning(true);
    controls.setRunning(true);
    view.draw();
    expect(untranslated(view.root, data)).toEqual([]);

    const status = new KernelStatus(t);
    status.follow("a");
    status.update(reply);
    expect(status.text()).toMatch(/^«.*»$/);
    expect(describeAutocount("on", t).text).toBe("«per-cell counts»");
  });
});
