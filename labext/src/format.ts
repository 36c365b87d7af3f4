// Numbers as the views print them. Totals are exact with thousands separators; rates are
// compact (k, M, G) because they change every frame and only their size matters. A counter of
// CPU time (task-clock in ns, cpu-time in s) per second is a share of one CPU: "97% CPU".

const PREFIXES = ["", "k", "M", "G", "T"];

/** A size (KiB, as /proc reports RSS) is a level, charted as it is; anything else is a count,
 * charted as its rate per second. */
export function isLevel(unit: string): boolean {
  return unit === "KiB";
}

/** The smallest top a chart's axis gets, so that an idle counter's axis still reads in whole
 * units: 1 per second, 1% of a CPU, 1 MiB. */
export function smallestTop(unit: string): number {
  if (unit === "ns") return 1e7;
  if (unit === "s") return 0.01;
  return unit === "KiB" ? 1024 : 1;
}

/** A counter's total: "1,234,567", or seconds/bytes with their unit; "n/a" when unknown. */
export function formatTotal(value: number | null, unit: string): string {
  if (value === null || !Number.isFinite(value)) return "n/a";
  if (unit === "ns")
    return `${(value / 1e6).toLocaleString("en-US", { maximumFractionDigits: 1 })} ms`;
  if (unit === "s") return `${value.toLocaleString("en-US", { maximumFractionDigits: 3 })} s`;
  const text = Math.round(value).toLocaleString("en-US");
  return unit ? `${text} ${unit}` : text;
}

function compact(value: number): string {
  let v = Math.abs(value);
  let i = 0;
  while (v >= 1000 && i < PREFIXES.length - 1) {
    v /= 1000;
    i += 1;
  }
  // one decimal where it matters: "2.5k/s", "0.5/s"; none on a round or a large number
  const digits = Number.isInteger(v) || v >= 100 || (i === 0 && v >= 10) ? 0 : 1;
  return `${value < 0 ? "-" : ""}${v.toFixed(digits)}${PREFIXES[i]}`;
}

/** A rate per second in compact form: "0/s", "950/s", "12.3k/s", "4.1M/s"; CPU time per
 * second as a share of one CPU ("50% CPU"); "–" before a rate exists. */
export function formatRate(perSecond: number | null, unit = ""): string {
  if (perSecond === null || !Number.isFinite(perSecond)) return "–";
  if (unit === "ns" || unit === "s") {
    const share = perSecond * (unit === "ns" ? 1e-9 : 1) * 100;
    return `${share.toFixed(share < 10 && !Number.isInteger(share) ? 1 : 0)}% CPU`;
  }
  return unit ? `${compact(perSecond)} ${unit}/s` : `${compact(perSecond)}/s`;
}

/** A level's value: sizes in binary units ("85.3 MiB"), anything else as a total. */
export function formatLevel(value: number | null, unit: string): string {
  return unit === "KiB" ? formatKiB(value) : formatTotal(value, unit);
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
  return `${v.toFixed(i === 0 || v >= 100 || Number.isInteger(v) ? 0 : 1)} ${BINARY[i]}`;
}
