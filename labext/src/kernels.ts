// The server extension's replies (see pagelab.jupyter.serverext; stream.ts fills in the series a
// socket's messages leave out while unchanged) and how one becomes the ISampleBatch a LiveView
// takes, the same shape the widget's messages decode to.

import type { ICounterInfo, ISampleBatch } from "./protocol";

/** One kernel of the server's user: its series and the samples since the last poll. */
export interface IKernelCounters {
  id: string;
  name: string;
  pid: number;
  execution_state: string;
  series: ICounterInfo[];
  /** rows [t, value, value, ...]; null where a value could not be read */
  samples: (number | null)[][];
}

export interface IKernelsReply {
  version: string;
  /** seconds on the server's watch clock, the clock of every sample's t */
  now: number;
  /** how often this client gets a sample: its setting, or the server's cap */
  interval_ms: number;
  /** why the server's sampling failed (it retries), or null */
  sampling_error: string | null;
  /** e.g. that the server caps the rate below the setting ("" if nothing) */
  note: string;
  kernels: IKernelCounters[];
}

/** A kernel's samples as a batch (null becomes NaN: unknown, never 0). */
export function toBatch(k: IKernelCounters): ISampleBatch {
  const m = k.series.length;
  const times = new Float64Array(k.samples.length);
  const values = new Float64Array(k.samples.length * m);
  k.samples.forEach((row, i) => {
    times[i] = row[0] ?? Number.NaN;
    for (let j = 0; j < m; j++) values[i * m + j] = row[1 + j] ?? Number.NaN;
  });
  return { times, values, counters: m };
}

/** The newest sample time in a reply, or null: the next poll asks only for later ones. */
export function latest(reply: IKernelsReply): number | null {
  let t: number | null = null;
  for (const k of reply.kernels) {
    const last = k.samples.length ? k.samples[k.samples.length - 1][0] : null;
    if (last !== null && (t === null || last > t)) t = last;
  }
  return t;
}

/** Whether two series lists describe the same rows (a change rebuilds the view). */
export function sameSeries(a: readonly ICounterInfo[], b: readonly ICounterInfo[]): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** The last known value of series ``name`` in a kernel's samples, or null. */
export function lastValue(k: IKernelCounters, name: string): number | null {
  const i = k.series.findIndex((s) => s.name === name);
  if (i < 0) return null;
  for (let r = k.samples.length - 1; r >= 0; r--) {
    const v = k.samples[r][1 + i];
    if (v !== null && v !== undefined) return v;
  }
  return null;
}
