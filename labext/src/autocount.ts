// The `autocount` setting: counts under every cell without typing the magic. The front end runs
// the magic itself, silently (no output, no history, and IPython's cell hooks do not fire for a
// silent request), in every Python notebook kernel it connects to, again after each restart,
// and turns it off where it turned it on when the setting goes off. AutoCount holds the states;
// silentRun and trackKernel connect it to JupyterLab's kernel connections.

import type { Kernel } from "@jupyterlab/services";

import { plain, type ITrans } from "./i18n";

export const ON = "%load_ext pagelab\n%pagelab autocount on";
export const OFF = "%pagelab autocount off";

/** Runs code silently in one kernel; resolves to null, or to what went wrong (error, stderr). */
export type Run = (code: string) => Promise<string | null>;

export type State = "on" | "off" | "pending" | { error: string };

interface ITracked {
  run: Run;
  state: State;
  request: number; // the latest request's number: only its answer sets the state
}

export class AutoCount {
  private enabled = false;
  private readonly kernels = new Map<string, ITracked>();

  /** ``changed`` hears every change of a kernel's state (e.g. to redraw the status bar). */
  constructor(private readonly changed: (kernelId: string) => void = () => {}) {}

  /** The setting: on turns autocount on in every known kernel, off turns it off again. */
  setEnabled(on: boolean): void {
    this.enabled = on;
    for (const [id, k] of this.kernels) {
      if (on && k.state !== "on" && k.state !== "pending") void this.apply(id, k, true);
      if (!on && (k.state === "on" || k.state === "pending")) void this.apply(id, k, false);
    }
  }

  /** A kernel that is ready for code (new, or back from a restart); known ones are left alone. */
  add(kernelId: string, run: Run): void {
    if (this.kernels.has(kernelId)) return;
    const k: ITracked = { run, state: "off", request: 0 };
    this.kernels.set(kernelId, k);
    if (this.enabled) void this.apply(kernelId, k, true);
  }

  /** A kernel that restarted or ended: whatever it had turned on is gone with its process. */
  drop(kernelId: string): void {
    if (this.kernels.delete(kernelId)) this.changed(kernelId);
  }

  state(kernelId: string): State | null {
    return this.kernels.get(kernelId)?.state ?? null;
  }

  private async apply(id: string, k: ITracked, on: boolean): Promise<void> {
    const request = ++k.request;
    k.state = on ? "pending" : "off";
    this.changed(id);
    let error: string | null;
    try {
      error = await k.run(on ? ON : OFF);
    } catch (e) {
      error = String(e);
    }
    // restarted meanwhile (add() starts again), or the setting changed again: a later answer
    if (this.kernels.get(id) !== k || k.request !== request) return;
    k.state = error ? { error } : on ? "on" : "off";
    this.changed(id);
  }
}

/** What the status bar says about one kernel's autocount ("" when the setting left it off). */
export function describe(state: State | null, t: ITrans = plain): { text: string; title: string } {
  if (state === "on") {
    return { text: t.__("per-cell counts"), title: t.__("autocount is on (setting)") };
  }
  if (state === "pending") {
    return { text: t.__("per-cell counts…"), title: t.__("turning autocount on") };
  }
  if (state === null || state === "off") return { text: "", title: "" };
  return { text: t.__("per-cell counts failed"), title: t.__("autocount: %1", state.error) };
}

/** Code run silently in a kernel: no output in the notebook, no history, no cell hooks. */
export function silentRun(kernel: Kernel.IKernelConnection): Run {
  return async (code) => {
    let stderr = "";
    const future = kernel.requestExecute({ code, silent: true, store_history: false });
    future.onIOPub = (msg) => {
      const c = msg.content as { name?: string; text?: string };
      if (msg.header.msg_type === "stream" && c.name === "stderr") stderr += c.text ?? "";
    };
    const reply = (await future.done).content;
    if (reply.status === "error") return `${reply.ename}: ${reply.evalue}`;
    return stderr.trim() || null;
  };
}

/** Keeps autocount in step with one kernel's life: added once it is idle (if it runs Python),
 * dropped when it (re)starts or ends, since its hooks go with its process. */
export function trackKernel(autocount: AutoCount, kernel: Kernel.IKernelConnection): void {
  const status = kernel.status;
  if (["starting", "restarting", "autorestarting", "dead"].includes(status)) {
    autocount.drop(kernel.id);
  } else if (status === "idle" && autocount.state(kernel.id) === null) {
    void kernel.info.then((info) => {
      if (info.language_info.name !== "python" || kernel.isDisposed) return;
      autocount.add(kernel.id, silentRun(kernel));
      kernel.disposed.connect(() => autocount.drop(kernel.id));
    });
  }
}
