import { describe, expect, it } from "vitest";
import { History, MAX_POINTS, WINDOW_S, rate } from "../src/history";

describe("rates", () => {
  it("is the change per second between two samples", () => {
    expect(rate(1, 100, 1.5, 300)).toBe(400);
  });
  it("never goes negative when a counter is reset", () => {
    expect(rate(1, 500, 2, 0)).toBe(0);
  });
});

describe("History", () => {
  it("keeps the rates of the last WINDOW_S seconds, each at its sample's time", () => {
    const h = new History();
    for (let i = 0; i <= 200; i++) h.push(i / 10, i * 5); // 20 s at 10 Hz, 50 per second
    expect(h.total).toBe(1000);
    expect(h.rate).toBeCloseTo(50);
    expect(h.now).toBe(20);
    expect(h.times[0]).toBeGreaterThanOrEqual(20 - WINDOW_S);
    expect(h.times.length).toBe(WINDOW_S * 10 + 1);
    expect(h.points.every((p) => Math.abs(p - 50) < 1e-9)).toBe(true);
  });
  it("keeps at most MAX_POINTS however fast the samples come", () => {
    const h = new History();
    for (let i = 0; i < 5000; i++) h.push(i / 1000, i);
    expect(h.points.length).toBe(MAX_POINTS);
  });
  it("charts a level's values as they are", () => {
    const h = new History(true);
    h.push(0, 2048);
    h.push(1, 1024);
    expect(h.points).toEqual([2048, 1024]);
    expect(h.total).toBe(1024);
  });
  it("treats NaN samples as unavailable, not as zero", () => {
    const h = new History();
    h.push(0, Number.NaN);
    h.push(1, Number.NaN);
    expect(h.total).toBeNull();
    expect(h.rate).toBeNull();
    expect(h.points).toEqual([]);
  });
});
