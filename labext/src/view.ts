// The LiveCounters view: one card per counter (name, source tag, latest rate and total, a chart
// of the last WINDOW_S seconds with its axes, and the reason when it cannot be read), under a
// head with the target, the state and, in the widget, its controls. Everything from the kernel
// is set as text (textContent, setAttribute), never parsed as HTML. The look is the extension's
// style (labext/style/index.css), in JupyterLab's theme variables.

import { chartPoints, niceMax } from "./chart";
import { formatLevel, formatRate, formatTotal, isLevel, smallestTop } from "./format";
import { History, WINDOW_S } from "./history";
import { plain, type ITrans } from "./i18n";
import type { ICounterInfo, ISampleBatch } from "./protocol";

const SVG = "http://www.w3.org/2000/svg";
// The plot's own coordinates; CSS sizes it (preserveAspectRatio none, strokes unscaled).
const PLOT_W = 300;
const PLOT_H = 60;
const LABEL_EVERY_S = 1; // how often a chart's text alternative is rewritten

export interface IViewOptions {
  trans?: ITrans;
  /** shown in the head (the widget; the panel says it once for all kernels) */
  version?: string;
  /** the widget's controls, put in the head */
  controls?: HTMLElement;
}

interface IRow {
  node: HTMLElement;
  counter: ICounterInfo;
  history: History;
  rate: HTMLElement | null; // a count's latest rate
  total: HTMLElement; // a count's total, a level's value, or n/a
  chart: HTMLElement | null;
  line: SVGPolylineElement | null;
  ticks: HTMLElement[]; // the y axis: top, middle
  labelled: number; // sample time of the chart's current text alternative
}

function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  className: string,
  text = "",
): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  e.className = className;
  e.textContent = text;
  return e;
}

function svg<K extends keyof SVGElementTagNameMap>(
  tag: K,
  attrs: Record<string, string | number>,
): SVGElementTagNameMap[K] {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  return e;
}

export class LiveView {
  readonly root: HTMLElement;
  /** How many times the cards were redrawn (read by the browser test and the bench). */
  draws = 0;
  private readonly trans: ITrans;
  private readonly list: HTMLElement;
  private readonly title: HTMLElement;
  private readonly state: HTMLElement;
  private rows: IRow[] = [];

  constructor(options: IViewOptions = {}) {
    const trans = (this.trans = options.trans ?? plain);
    this.root = el("div", "pagelab-live");
    this.root.dataset.pagelab = "livecounters";
    this.root.setAttribute("role", "group");
    const head = el("div", "pl-head");
    this.title = el("span", "pl-title");
    this.state = el("span", "pl-state");
    head.append(this.title, this.state);
    if (options.controls) head.append(options.controls);
    if (options.version) {
      head.append(el("span", "pl-version", trans.__("pagelab %1", options.version)));
    }
    this.list = el("ul", "pl-counters");
    this.list.setAttribute("role", "list"); // a list without bullets keeps its role
    this.root.append(head, this.list);
  }

  setTarget(target: string): void {
    this.setTitle(this.trans.__("live counters: %1", target));
  }

  /** The head's title as it is (the panel names kernels its own way). */
  setTitle(title: string): void {
    this.title.textContent = title;
    this.root.setAttribute("aria-label", title);
  }

  setRunning(running: boolean): void {
    this.state.textContent = running ? this.trans.__("sampling") : this.trans.__("stopped");
    this.root.dataset.running = String(running);
  }

  /** Rebuild the cards for a new counter list (names, units, sources, reasons). */
  setCounters(counters: ICounterInfo[]): void {
    this.rows = counters.map((c) => this.card(c));
    this.list.replaceChildren(...this.rows.map((r) => r.node));
  }

  private card(c: ICounterInfo): IRow {
    const t = this.trans;
    const li = el("li", c.reason ? "pl-counter pl-unavailable" : "pl-counter");
    li.dataset.counter = c.name;
    const top = el("div", "pl-top");
    const source = el("span", "pl-source", c.source);
    source.title = t.__("source: %1", c.source);
    top.append(el("span", "pl-name", c.name), el("span", "pl-sr", t.__("source:")), source);
    const now = el("div", "pl-now");
    const level = isLevel(c.unit);
    const row: IRow = {
      node: li,
      counter: c,
      history: new History(level),
      rate: level || c.reason ? null : el("span", "pl-rate"),
      total: el("span", "pl-total"),
      chart: null,
      line: null,
      ticks: [],
      labelled: -Infinity,
    };
    if (row.rate) now.append(row.rate, row.total, el("span", "pl-unit", t.__("total")));
    else now.append(row.total);
    li.append(top, now);
    if (!c.reason) li.append(this.chart(row));
    const why = c.reason ? t.__("unavailable: %1", c.reason) : c.note;
    if (why) li.append(el("div", c.reason ? "pl-reason" : "pl-note", why));
    li.title = why; // where the notes are hidden (the panel), the tooltip says them
    return row;
  }

  private chart(row: IRow): HTMLElement {
    const chart = el("div", "pl-chart");
    chart.setAttribute("role", "img");
    const yaxis = el("div", "pl-yaxis");
    row.ticks = [el("span", "pl-tick pl-tick-top"), el("span", "pl-tick pl-tick-mid")];
    yaxis.append(...row.ticks, el("span", "pl-tick pl-tick-zero", this.value(row, 0)));
    const plot = svg("svg", {
      class: "pl-plot",
      viewBox: `0 0 ${PLOT_W} ${PLOT_H}`,
      preserveAspectRatio: "none",
      "aria-hidden": "true",
    });
    for (const y of [0, PLOT_H / 2, PLOT_H]) {
      plot.append(svg("line", { class: "pl-grid", x1: 0, x2: PLOT_W, y1: y, y2: y }));
    }
    const mid = PLOT_W / 2; // the time axis's middle, -5 s
    plot.append(svg("line", { class: "pl-grid", x1: mid, x2: mid, y1: 0, y2: PLOT_H }));
    row.line = svg("polyline", { class: "pl-line", fill: "none", stroke: "currentColor" });
    plot.append(row.line);
    const xaxis = el("div", "pl-xaxis");
    xaxis.append(
      el("span", "pl-tick", this.trans.__("−%1 s", WINDOW_S)),
      el("span", "pl-tick", this.trans.__("−%1 s", WINDOW_S / 2)),
      el("span", "pl-tick", this.trans.__("now")),
    );
    chart.append(yaxis, plot, xaxis);
    row.chart = chart;
    this.label(row);
    return chart;
  }

  /** A point's value as the axis and the latest figure print it. */
  private value(row: IRow, v: number | null): string {
    const unit = row.counter.unit;
    return row.history.level ? formatLevel(v, unit) : formatRate(v, unit);
  }

  /** The chart's text alternative: what it shows, the latest value and the range drawn. */
  private label(row: IRow): void {
    const t = this.trans;
    const h = row.history;
    const what = h.level
      ? t.__("%1 over the last %2 seconds", row.counter.name, WINDOW_S)
      : t.__("%1 per second over the last %2 seconds", row.counter.name, WINDOW_S);
    let text = t.__("%1: no samples yet", what);
    if (h.points.length) {
      text = t.__(
        "%1: now %2, lowest %3, highest %4",
        what,
        this.value(row, h.rate),
        this.value(row, Math.min(...h.points)),
        this.value(row, Math.max(...h.points)),
      );
    }
    row.chart?.setAttribute("aria-label", text);
  }

  /** Take in a batch of samples; drawing happens separately (throttled). */
  add(batch: ISampleBatch): void {
    const m = Math.min(batch.counters, this.rows.length);
    for (let k = 0; k < batch.times.length; k++) {
      for (let i = 0; i < m; i++) {
        this.rows[i].history.push(batch.times[k], batch.values[k * batch.counters + i]);
      }
    }
  }

  clear(): void {
    for (const r of this.rows) {
      r.history.clear();
      r.labelled = -Infinity;
    }
  }

  draw(): void {
    for (const row of this.rows) {
      const h = row.history;
      const unit = row.counter.unit;
      if (row.rate) {
        row.rate.textContent = formatRate(h.rate, unit);
        row.total.textContent = formatTotal(h.total, unit);
      } else {
        row.total.textContent = formatLevel(h.total, unit);
      }
      if (!row.line) continue;
      const top = niceMax(Math.max(smallestTop(unit), ...h.points), h.level);
      row.ticks[0].textContent = this.value(row, top);
      row.ticks[1].textContent = this.value(row, top / 2);
      const now = h.now ?? 0;
      row.line.setAttribute(
        "points",
        chartPoints(h.times, h.points, now, WINDOW_S, top, PLOT_W, PLOT_H),
      );
      if (now - row.labelled >= LABEL_EVERY_S || now < row.labelled) {
        row.labelled = now;
        this.label(row);
      }
    }
    this.draws += 1;
    this.root.dataset.draws = String(this.draws);
  }
}
