import { describe, expect, it } from "vitest";
import { chartPoints, niceMax } from "../src/chart";

describe("niceMax", () => {
  it("rounds the largest point up to 1, 2 or 5 times a power of ten", () => {
    expect(niceMax(3400)).toBe(5000);
    expect(niceMax(1000)).toBe(1000);
    expect(niceMax(1001)).toBe(2000);
    expect(niceMax(0.37)).toBe(0.5);
    expect(niceMax(7e8)).toBe(1e9);
  });
  it("rounds sizes up to a power of two", () => {
    expect(niceMax(87_000, true)).toBe(131_072);
  });
  it("gives an axis to a counter that never moved", () => {
    expect(niceMax(0)).toBe(1);
  });
});

describe("chartPoints", () => {
  it("puts the newest sample at the right edge and the window's start at the left", () => {
    // 10 s window, 100 x 20 box, top 10: t=0 at x=0, t=5 at x=50, t=10 at x=100
    expect(chartPoints([0, 5, 10], [0, 5, 10], 10, 10, 10, 100, 20)).toBe("0,20 50,10 100,0");
  });
  it("places points by time, so a gap in the samples shows as a gap in time", () => {
    expect(chartPoints([9, 10], [10, 10], 10, 10, 10, 100, 20)).toBe("90,0 100,0");
  });
  it("is empty without data", () => {
    expect(chartPoints([], [], 0, 10, 1, 100, 20)).toBe("");
  });
});
