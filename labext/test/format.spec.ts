import { describe, expect, it } from "vitest";
import {
  formatKiB,
  formatLevel,
  formatRate,
  formatTotal,
  isLevel,
  smallestTop,
} from "../src/format";

describe("formatTotal", () => {
  it("prints counts exactly with thousands separators", () => {
    expect(formatTotal(1234567, "")).toBe("1,234,567");
  });
  it("prints nanoseconds as milliseconds and keeps other units", () => {
    expect(formatTotal(2_500_000, "ns")).toBe("2.5 ms");
    expect(formatTotal(1536, "KiB")).toBe("1,536 KiB");
  });
  it("says n/a for an unknown value instead of 0", () => {
    expect(formatTotal(null, "")).toBe("n/a");
    expect(formatTotal(Number.NaN, "")).toBe("n/a");
  });
});

describe("formatRate", () => {
  it("uses compact prefixes, without a trailing .0", () => {
    expect(formatRate(0)).toBe("0/s");
    expect(formatRate(950)).toBe("950/s");
    expect(formatRate(12_345)).toBe("12.3k/s");
    expect(formatRate(4_100_000)).toBe("4.1M/s");
    expect(formatRate(250_000)).toBe("250k/s");
    expect(formatRate(2000)).toBe("2k/s");
    expect(formatRate(2500)).toBe("2.5k/s");
    expect(formatRate(0.5)).toBe("0.5/s");
    expect(formatRate(12.34)).toBe("12/s");
  });
  it("prints CPU time per second as a share of one CPU", () => {
    expect(formatRate(5e8, "ns")).toBe("50% CPU");
    expect(formatRate(1, "s")).toBe("100% CPU");
    expect(formatRate(0.025, "s")).toBe("2.5% CPU");
  });
  it("keeps another unit", () => {
    expect(formatRate(3000, "B")).toBe("3k B/s");
  });
  it("shows a dash before a rate exists", () => {
    expect(formatRate(null)).toBe("–");
  });
});

describe("levels", () => {
  it("are sizes, charted as they are; counts are charted as rates", () => {
    expect(isLevel("KiB")).toBe(true);
    expect(isLevel("")).toBe(false);
    expect(isLevel("ns")).toBe(false);
  });
  it("give an idle counter's axis a top in whole units", () => {
    expect(formatRate(smallestTop(""))).toBe("1/s");
    expect(formatRate(smallestTop("ns"), "ns")).toBe("1% CPU");
    expect(formatLevel(smallestTop("KiB"), "KiB")).toBe("1 MiB");
  });
  it("print in binary units", () => {
    expect(formatLevel(131_072, "KiB")).toBe("128 MiB");
  });
});

describe("formatKiB", () => {
  it("prints sizes from /proc (KiB) in binary units", () => {
    expect(formatKiB(512)).toBe("512 KiB");
    expect(formatKiB(1536)).toBe("1.5 MiB");
    expect(formatKiB(300 * 1024)).toBe("300 MiB");
    expect(formatKiB(null)).toBe("n/a");
  });
});
