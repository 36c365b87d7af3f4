// A counter's time series as chart geometry: the y axis's top, and the SVG polyline of the
// points over the time window (the newest sample at the right edge, 0 at the bottom). Pure, so
// the specs check it without a DOM.

/** The axis top: the smallest 1, 2 or 5 x 10^k (a power of two for sizes) at or above the
 * largest point, so the top and the middle gridline read as round numbers; 1 when all are 0. */
export function niceMax(largest: number, binary = false): number {
  if (!(largest > 0)) return 1;
  if (binary) return 2 ** Math.ceil(Math.log2(largest));
  const decade = 10 ** Math.floor(Math.log10(largest));
  for (const step of [1, 2, 5, 10]) {
    if (step * decade >= largest * (1 - 1e-12)) return step * decade;
  }
  return 10 * decade;
}

/** "x,y x,y ..." of the points taken at ``times`` within ``windowS`` seconds before ``now``,
 * in a ``width`` x ``height`` box whose top is ``top``. */
export function chartPoints(
  times: readonly number[],
  values: readonly number[],
  now: number,
  windowS: number,
  top: number,
  width: number,
  height: number,
): string {
  const out: string[] = [];
  for (let i = 0; i < times.length; i++) {
    const x = width * (1 - (now - times[i]) / windowS);
    const y = height * (1 - Math.min(values[i], top) / top);
    out.push(`${round(x)},${round(y)}`);
  }
  return out.join(" ");
}

function round(v: number): number {
  return Math.round(v * 10) / 10;
}
