// The LiveCounters view: one row per counter (name, total, rate, sparkline, source tag, reason)
// and the start/stop/reset controls. Everything from the kernel is set as text (textContent,
// setAttribute), never parsed as HTML.

import { formatRate, formatTotal } from "./format";
import { History } from "./history";
import type { CounterInfo, SampleBatch } from "./protocol";
import { sparklinePoints } from "./sparkline";

const SVG = "http://www.w3.org/2000/svg";
const SPARK_W = 120;
const SPARK_H = 20;

interface Row {
  total: HTMLElement;
  rate: HTMLElement;
  line: SVGPolylineElement;
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

export class LiveView {
  readonly root: HTMLElement;
  /** How many times the rows were redrawn (read by the browser test and the bench). */
  draws = 0;
  private readonly body: HTMLElement;
  private readonly title: HTMLElement;
  private readonly state: HTMLElement;
  private counters: CounterInfo[] = [];
  private histories: History[] = [];
  private rows: Row[] = [];

  /** ``onControl`` null: no start/stop/reset buttons (the lab's kernel panel has none). */
  constructor(onControl: ((action: "start" | "stop" | "reset") => void) | null, version: string) {
    this.root = el("div", "pagelab-live");
    this.root.dataset.pagelab = "livecounters";
    const head = el("div", "pl-head");
    this.title = el("span", "pl-title");
    this.state = el("span", "pl-state");
    head.append(this.title, this.state);
    for (const action of onControl ? (["start", "stop", "reset"] as const) : []) {
      const b = el("button", `pl-${action}`, action);
      b.type = "button";
      b.addEventListener("click", () => onControl?.(action));
      head.append(b);
    }
    head.append(el("span", "pl-version", `pagelab ${version}`));
    const table = el("table", "pl-table");
    const header = el("tr", "pl-header");
    for (const h of ["counter", "total", "rate", "", "source", "notes"]) header.append(el("th", "", h));
    table.append(header);
    this.body = el("tbody", "pl-body");
    table.append(this.body);
    this.root.append(head, table);
  }

  setTarget(target: string): void {
    this.title.textContent = `live counters: ${target}`;
  }

  setRunning(running: boolean): void {
    this.state.textContent = running ? "sampling" : "stopped";
    this.root.dataset.running = String(running);
  }

  /** Rebuild the rows for a new counter list (names, units, sources, reasons). */
  setCounters(counters: CounterInfo[]): void {
    this.counters = counters;
    this.histories = counters.map(() => new History());
    this.rows = [];
    this.body.replaceChildren();
    for (const c of counters) {
      const tr = el("tr", c.reason ? "pl-row pl-unavailable" : "pl-row");
      tr.dataset.counter = c.name;
      const total = el("td", "pl-total");
      const rate = el("td", "pl-rate");
      const spark = el("td", "pl-spark");
      const svg = document.createElementNS(SVG, "svg");
      svg.setAttribute("width", String(SPARK_W));
      svg.setAttribute("height", String(SPARK_H));
      const line = document.createElementNS(SVG, "polyline");
      line.setAttribute("fill", "none");
      line.setAttribute("stroke", "currentColor");
      svg.append(line);
      spark.append(svg);
      const why = [c.reason && `unavailable: ${c.reason}`, c.note].filter(Boolean).join("; ");
      const whyClass = c.reason ? "pl-reason" : "pl-note";
      tr.title = why; // narrow hosts (the lab's side panel) hide the notes column
      tr.append(
        el("td", "pl-name", c.name),
        total,
        rate,
        spark,
        el("td", "pl-source", c.source),
        el("td", whyClass, why),
      );
      this.body.append(tr);
      this.rows.push({ total, rate, line });
    }
  }

  /** Take in a batch of samples; drawing happens separately (throttled). */
  add(batch: SampleBatch): void {
    const m = Math.min(batch.counters, this.histories.length);
    for (let k = 0; k < batch.times.length; k++) {
      for (let i = 0; i < m; i++) {
        this.histories[i].push(batch.times[k], batch.values[k * batch.counters + i]);
      }
    }
  }

  clear(): void {
    for (const h of this.histories) h.clear();
  }

  draw(): void {
    this.rows.forEach((row, i) => {
      const h = this.histories[i];
      const c = this.counters[i];
      row.total.textContent = formatTotal(h.total, c.unit);
      row.rate.textContent = formatRate(h.rate);
      row.line.setAttribute("points", sparklinePoints(h.rates, SPARK_W, SPARK_H));
    });
    this.draws += 1;
    this.root.dataset.draws = String(this.draws);
  }
}
