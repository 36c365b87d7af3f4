import { describe, expect, it } from "vitest";
import { History, WINDOW, rate } from "../src/history";
import { sparklinePoints } from "../src/sparkline";

describe("rates", () => {
  it("is the change per second between two samples", () => {
    expect(rate(1, 100, 1.5, 300)).toBe(400);
  });
  it("never goes negative when a counter is reset", () => {
    expect(rate(1, 500, 2, 0)).toBe(0);
  });
  it("History keeps a bounded window and the latest rate", () => {
    const h = new History();
    for (let i = 0; i <= WINDOW + 10; i++) h.push(i / 10, i * 5);
    expect(h.total).toBe((WINDOW + 10) * 5);
    expect(h.rate).toBeCloseTo(50);
    expect(h.rates.length).toBe(WINDOW);
    expect(h.totals.length).toBe(WINDOW);
  });
  it("treats NaN samples as unavailable, not as zero", () => {
    const h = new History();
    h.push(0, Number.NaN);
    h.push(1, Number.NaN);
    expect(h.total).toBeNull();
    expect(h.rate).toBeNull();
    expect(h.totals).toEqual([null, null]);
  });
});

describe("sparkline data", () => {
  it("scales the largest rate to the top and zero to the bottom", () => {
    expect(sparklinePoints([0, 5, 10], 100, 20)).toBe("0,20 50,10 100,0");
  });
  it("draws a flat line at the bottom when nothing happens", () => {
    expect(sparklinePoints([0, 0], 10, 20)).toBe("0,20 10,20");
  });
  it("is empty without data", () => {
    expect(sparklinePoints([], 10, 20)).toBe("");
  });
});
