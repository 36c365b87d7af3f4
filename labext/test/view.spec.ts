import { describe, expect, it } from "vitest";
import { Controls } from "../src/controls";
import { plain } from "../src/i18n";
import { decodeSamples } from "../src/protocol";
import { Throttle } from "../src/throttle";
import { LiveView } from "../src/view";

const counters = [
  { name: "page-faults", unit: "", source: "sw", reason: "", note: "" },
  {
    name: "dTLB-load-misses",
    unit: "",
    source: "hw",
    reason: "<img src=x onerror=alert(1)> no PMU",
    note: "",
  },
  { name: "task-clock", unit: "ns", source: "sw", reason: "", note: "main thread" },
];

function batch(times: number[], values: number[]) {
  const t = new Float64Array(times);
  const v = new Float64Array(values);
  // as ipywidgets delivers them: DataViews
  return decodeSamples({ n: times.length, counters: 3 }, [
    new DataView(t.buffer),
    new DataView(v.buffer),
  ]);
}

/** page-faults at 1000/s then 3000/s; task-clock at half a CPU. */
function drawn(): LiveView {
  const view = new LiveView({ version: "0.0.0" });
  view.setCounters(counters);
  view.add(batch([0, 0.5, 1], [100, NaN, 0, 600, NaN, 2.5e8, 2100, NaN, 5e8]));
  view.draw();
  return view;
}

describe("LiveView", () => {
  it("draws rates, totals and sources, and marks unavailable counters with their reason", () => {
    const view = drawn();
    const pf = view.root.querySelector('[data-counter="page-faults"]')!;
    expect(pf.querySelector(".pl-rate")!.textContent).toBe("3k/s");
    expect(pf.querySelector(".pl-total")!.textContent).toBe("2,100");
    expect(pf.querySelector(".pl-source")!.textContent).toBe("sw");
    const tc = view.root.querySelector('[data-counter="task-clock"]')!;
    expect(tc.querySelector(".pl-rate")!.textContent).toBe("50% CPU");
    const tlb = view.root.querySelector('[data-counter="dTLB-load-misses"]')!;
    expect(tlb.classList.contains("pl-unavailable")).toBe(true);
    expect(tlb.querySelector(".pl-total")!.textContent).toBe("n/a");
    expect(tlb.querySelector(".pl-reason")!.textContent).toContain("no PMU");
    expect(tlb.querySelector(".pl-chart")).toBeNull(); // nothing to chart
  });

  it("charts each counter's rate against a y axis with its unit and a time axis", () => {
    const pf = drawn().root.querySelector('[data-counter="page-faults"]')!;
    const ticks = Array.from(pf.querySelectorAll(".pl-yaxis .pl-tick"), (t) => t.textContent);
    expect(ticks).toEqual(["5k/s", "2.5k/s", "0/s"]); // 3000/s under a top of 5000/s
    const x = Array.from(pf.querySelectorAll(".pl-xaxis .pl-tick"), (t) => t.textContent);
    expect(x).toEqual(["−10 s", "−5 s", "now"]);
    // rates 1000/s at t=0.5 and 3000/s at t=1 (now): x from the 10 s window, y from the top
    expect(pf.querySelector("polyline")!.getAttribute("points")).toBe("285,48 300,24");
    const cpu = drawn().root.querySelector('[data-counter="task-clock"] .pl-tick-top')!;
    expect(cpu.textContent).toBe("50% CPU");
  });

  it("gives each chart a text alternative with its latest value and the range drawn", () => {
    const chart = drawn().root.querySelector('[data-counter="page-faults"] .pl-chart')!;
    expect(chart.getAttribute("role")).toBe("img");
    expect(chart.getAttribute("aria-label")).toBe(
      "page-faults per second over the last 10 seconds: now 3k/s, lowest 1k/s, highest 3k/s",
    );
    expect(chart.querySelector("svg")!.getAttribute("aria-hidden")).toBe("true");
  });

  it("is a group named by its target, and its list keeps the list role", () => {
    const view = new LiveView();
    view.setTarget("pid 42");
    expect(view.root.getAttribute("role")).toBe("group");
    expect(view.root.getAttribute("aria-label")).toBe("live counters: pid 42");
    expect(view.root.querySelector("ul")!.getAttribute("role")).toBe("list");
  });

  it("renders text from the kernel as text, never as HTML", () => {
    const view = new LiveView();
    view.setCounters(counters);
    view.setTarget("<b>pid</b>");
    expect(view.root.querySelector("img")).toBeNull();
    expect(view.root.querySelector("b")).toBeNull();
    expect(view.root.textContent).toContain("<img src=x onerror=alert(1)>");
    expect(view.root.textContent).toContain("<b>pid</b>");
  });
});

describe("Controls", () => {
  it("are JupyterLab toolbar buttons: one stops or starts, one resets", () => {
    const sent: string[] = [];
    const controls = new Controls((a) => sent.push(a), plain);
    const view = new LiveView({ controls: controls.node });
    const toggle = view.root.querySelector<HTMLButtonElement>(".pl-toggle")!;
    expect(toggle.classList.contains("jp-ToolbarButtonComponent")).toBe(true);
    expect(view.root.querySelector('[role="toolbar"]')).not.toBeNull();
    controls.setRunning(true);
    expect(toggle.textContent!.trim()).toBe("Stop");
    toggle.click();
    controls.setRunning(false);
    expect(toggle.textContent!.trim()).toBe("Start");
    toggle.click();
    view.root.querySelector<HTMLButtonElement>(".pl-reset")!.click();
    expect(sent).toEqual(["stop", "start", "reset"]);
    expect(toggle.querySelector("svg")!.closest("[aria-hidden]")).not.toBeNull();
  });
});

describe("decodeSamples", () => {
  it("rejects a batch whose sizes do not match", () => {
    expect(() =>
      decodeSamples({ n: 2, counters: 2 }, [new ArrayBuffer(16), new ArrayBuffer(16)]),
    ).toThrow(/values/);
  });
});

describe("Throttle", () => {
  it("collapses many requests into one draw per frame and respects the frame rate", () => {
    let now = 0;
    const queue: (() => void)[] = [];
    let draws = 0;
    const t = new Throttle(
      () => draws++,
      30,
      (cb) => queue.push(cb),
      () => now,
    );
    for (let i = 0; i < 100; i++) t.request();
    expect(queue.length).toBe(1);
    queue.shift()!();
    expect(draws).toBe(1);
    now += 5; // 5 ms later: too soon for 30 fps
    t.request();
    queue.shift()!();
    expect(draws).toBe(1);
    now += 40;
    queue.shift()!();
    expect(draws).toBe(2);
  });
});
