import { describe, expect, it } from "vitest";
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
];

function batch(times: number[], values: number[]) {
  const t = new Float64Array(times);
  const v = new Float64Array(values);
  // as ipywidgets delivers them: DataViews
  return decodeSamples({ n: times.length, counters: 2 }, [
    new DataView(t.buffer),
    new DataView(v.buffer),
  ]);
}

describe("LiveView", () => {
  it("draws totals, rates and sources, and marks unavailable counters with their reason", () => {
    const view = new LiveView(() => {}, "0.0.0");
    view.setCounters(counters);
    view.add(batch([0, 0.5], [100, Number.NaN, 600, Number.NaN]));
    view.draw();
    const pf = view.root.querySelector('[data-counter="page-faults"]')!;
    expect(pf.querySelector(".pl-total")!.textContent).toBe("600");
    expect(pf.querySelector(".pl-rate")!.textContent).toBe("1.0k/s");
    expect(pf.querySelector(".pl-source")!.textContent).toBe("sw");
    const tlb = view.root.querySelector('[data-counter="dTLB-load-misses"]')!;
    expect(tlb.classList.contains("pl-unavailable")).toBe(true);
    expect(tlb.querySelector(".pl-total")!.textContent).toBe("n/a");
    expect(tlb.querySelector(".pl-reason")!.textContent).toContain("no PMU");
  });

  it("renders text from the kernel as text, never as HTML", () => {
    const view = new LiveView(() => {}, "0.0.0");
    view.setCounters(counters);
    view.setTarget("<b>pid</b>");
    expect(view.root.querySelector("img")).toBeNull();
    expect(view.root.querySelector("b")).toBeNull();
    expect(view.root.textContent).toContain("<img src=x onerror=alert(1)>");
    expect(view.root.textContent).toContain("<b>pid</b>");
  });

  it("sends the control that was clicked", () => {
    const sent: string[] = [];
    const view = new LiveView((a) => sent.push(a), "0.0.0");
    (view.root.querySelector(".pl-stop") as HTMLButtonElement).click();
    (view.root.querySelector(".pl-reset") as HTMLButtonElement).click();
    expect(sent).toEqual(["stop", "reset"]);
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
    const t = new Throttle(() => draws++, 30, (cb) => queue.push(cb), () => now);
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
