// Numbers as the view prints them. Totals are exact with thousands separators; rates are
// compact (k, M, G) because they change every frame and only their size matters.

const PREFIXES = ["", "k", "M", "G", "T"];

/** A counter's total: "1,234,567", or seconds/bytes with their unit; "n/a" when unknown. */
export function formatTotal(value: number | null, unit: string): string {
  if (value === null || !Number.isFinite(value)) return "n/a";
  if (unit === "ns") return `${(value / 1e6).toLocaleString("en-US", { maximumFractionDigits: 1 })} ms`;
  if (unit === "s") return `${value.toLocaleString("en-US", { maximumFractionDigits: 3 })} s`;
  const text = Math.round(value).toLocaleString("en-US");
  return unit ? `${text} ${unit}` : text;
}

/** A rate per second in compact form: "0/s", "950/s", "12.3k/s", "4.1M/s". */
export function formatRate(perSecond: number | null): string {
  if (perSecond === null || !Number.isFinite(perSecond)) return "–";
  let v = Math.abs(perSecond);
  let i = 0;
  while (v >= 1000 && i < PREFIXES.length - 1) {
    v /= 1000;
    i += 1;
  }
  const digits = i === 0 || v >= 100 ? 0 : 1;
  const sign = perSecond < 0 ? "-" : "";
  return `${sign}${v.toFixed(digits)}${PREFIXES[i]}/s`;
}

const BINARY = ["KiB", "MiB", "GiB", "TiB"];

/** A size given in KiB (as /proc reports RSS), in the largest binary unit below 1024: "1.5 GiB". */
export function formatKiB(kib: number | null): string {
  if (kib === null || !Number.isFinite(kib)) return "n/a";
  let v = kib;
  let i = 0;
  while (v >= 1024 && i < BINARY.length - 1) {
    v /= 1024;
    i += 1;
  }
  return `${v.toFixed(i === 0 || v >= 100 ? 0 : 1)} ${BINARY[i]}`;
}
