// Sparkline geometry: rates scaled into a width x height box, as SVG polyline points. Pure, so
// the specs can check it without a DOM.

/** "x,y x,y ..." for the polyline; the newest point sits at the right edge. */
export function sparklinePoints(rates: readonly number[], width: number, height: number): string {
  if (rates.length === 0) return "";
  const max = Math.max(...rates);
  const step = rates.length > 1 ? width / (rates.length - 1) : 0;
  const x0 = rates.length > 1 ? 0 : width;
  return rates
    .map((r, i) => {
      const y = max > 0 ? height - (r / max) * height : height;
      return `${round(x0 + i * step)},${round(y)}`;
    })
    .join(" ");
}

function round(v: number): number {
  return Math.round(v * 10) / 10;
}
