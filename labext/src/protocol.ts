// The wire format between pagelab.LiveCounters (Python) and this view. Configuration travels in
// synced traits; samples travel as binary buffers in custom messages, never one number per message.

/** One counter as the kernel describes it (the synced `counters` trait). */
export interface ICounterInfo {
  name: string;
  unit: string;
  /** hw, sw, rusage or clock: where the numbers come from */
  source: string;
  /** why the counter cannot be read here, or "" when it can */
  reason: string;
  /** e.g. which rusage fields stand in for an unavailable perf event */
  note: string;
}

/** A batch of samples: `times` in seconds since start, `values` row-major [time][counter]. */
export interface ISampleBatch {
  times: Float64Array;
  values: Float64Array;
  counters: number;
}

/** Custom messages from the kernel. */
export type KernelMessage = { type: "samples"; n: number; counters: number } | { type: "reset" };

/** Custom messages to the kernel (the controls). */
export type ViewMessage = { type: "start" } | { type: "stop" } | { type: "reset" };

function asFloat64(buf: ArrayBuffer | DataView | Uint8Array): Float64Array {
  if (buf instanceof ArrayBuffer) return new Float64Array(buf);
  // ipywidgets hands buffers over as DataViews over a possibly larger, unaligned buffer: copy
  const bytes = new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength).slice();
  return new Float64Array(bytes.buffer);
}

/** Decode a "samples" message; throws on a malformed batch rather than drawing nonsense. */
export function decodeSamples(
  msg: { n: number; counters: number },
  buffers: ReadonlyArray<ArrayBuffer | DataView | Uint8Array>,
): ISampleBatch {
  if (buffers.length !== 2) throw new Error(`samples need 2 buffers, got ${buffers.length}`);
  const times = asFloat64(buffers[0]);
  const values = asFloat64(buffers[1]);
  if (times.length !== msg.n || values.length !== msg.n * msg.counters) {
    throw new Error(`samples: ${times.length} times and ${values.length} values for n=${msg.n}`);
  }
  return { times, values, counters: msg.counters };
}
