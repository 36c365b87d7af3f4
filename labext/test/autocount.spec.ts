import { describe as suite, expect, it } from "vitest";
import type { Kernel } from "@jupyterlab/services";
import { AutoCount, OFF, ON, describe, silentRun, trackKernel, type Run } from "../src/autocount";

/** A kernel that records the code it is sent and answers when told to. */
function kernel() {
  const sent: string[] = [];
  const answers: ((error: string | null) => void)[] = [];
  const run: Run = (code) => {
    sent.push(code);
    return new Promise((resolve) => answers.push(resolve));
  };
  const answer = async (error: string | null = null) => {
    answers.shift()!(error);
    await new Promise((r) => setTimeout(r, 0));
  };
  return { sent, run, answer };
}

suite("AutoCount (the autocount setting)", () => {
  it("sends nothing while the setting is off", () => {
    const k = kernel();
    const a = new AutoCount();
    a.add("k1", k.run);
    expect(k.sent).toEqual([]);
    expect(a.state("k1")).toBe("off");
  });

  it("turns autocount on in known and later kernels, and off only where it turned it on", async () => {
    const k1 = kernel();
    const k2 = kernel();
    const k3 = kernel();
    const a = new AutoCount();
    a.add("k1", k1.run);
    a.setEnabled(true);
    expect(k1.sent).toEqual([ON]);
    expect(a.state("k1")).toBe("pending");
    await k1.answer();
    expect(a.state("k1")).toBe("on");
    a.add("k2", k2.run);
    a.add("k2", k2.run); // known: left alone
    expect(k2.sent).toEqual([ON]);
    await k2.answer("ModuleNotFoundError: No module named 'pagelab'");
    expect(a.state("k2")).toEqual({ error: "ModuleNotFoundError: No module named 'pagelab'" });
    a.setEnabled(false);
    a.add("k3", k3.run);
    expect(k1.sent).toEqual([ON, OFF]);
    expect(k2.sent).toEqual([ON]); // it never got turned on
    expect(k3.sent).toEqual([]);
    await k1.answer();
    expect(a.state("k1")).toBe("off");
  });

  it("turns it on again after a restart, since the hooks went with the old process", async () => {
    const k = kernel();
    const a = new AutoCount();
    a.setEnabled(true);
    a.add("k1", k.run);
    await k.answer();
    a.drop("k1");
    expect(a.state("k1")).toBeNull();
    a.add("k1", k.run);
    expect(k.sent).toEqual([ON, ON]);
  });

  it("keeps the state of the latest request when the setting flips before an answer", async () => {
    const k = kernel();
    const a = new AutoCount();
    a.add("k1", k.run);
    a.setEnabled(true);
    a.setEnabled(false);
    a.setEnabled(true);
    expect(k.sent).toEqual([ON, OFF, ON]);
    await k.answer();
    await k.answer();
    expect(a.state("k1")).toBe("pending");
    await k.answer();
    expect(a.state("k1")).toBe("on");
  });

  it("tells whoever draws about every change of a kernel's state", async () => {
    const k = kernel();
    const heard: string[] = [];
    const a = new AutoCount((id) => heard.push(`${id}:${JSON.stringify(a.state(id))}`));
    a.setEnabled(true);
    a.add("k1", k.run);
    await k.answer();
    a.drop("k1");
    expect(heard).toEqual(['k1:"pending"', 'k1:"on"', "k1:null"]);
  });
});

suite("describe", () => {
  it("says nothing when off, and the error as the title when turning on failed", () => {
    expect(describe(null).text).toBe("");
    expect(describe("off").text).toBe("");
    expect(describe("on").text).toBe("per-cell counts");
    const failed = describe({ error: "ModuleNotFoundError: No module named 'pagelab'" });
    expect(failed.text).toBe("per-cell counts failed");
    expect(failed.title).toContain("No module named 'pagelab'");
  });
});

/** Just enough of a JupyterLab kernel connection: its status, language and execute requests. */
function connection(language: string, reply: object, stderr = "") {
  const requests: { code: string; silent: boolean; store_history: boolean }[] = [];
  const k = {
    id: "k1",
    status: "idle",
    isDisposed: false,
    info: Promise.resolve({ language_info: { name: language } }),
    disposed: { connect: () => true },
    requestExecute(content: { code: string; silent: boolean; store_history: boolean }) {
      requests.push(content);
      const future = {
        onIOPub: (_: unknown) => {},
        done: Promise.resolve().then(() => {
          if (stderr)
            future.onIOPub({
              header: { msg_type: "stream" },
              content: { name: "stderr", text: stderr },
            });
          return { content: reply };
        }),
      };
      return future;
    },
  };
  return { kernel: k as unknown as Kernel.IKernelConnection, k, requests };
}

const tick = () => new Promise((r) => setTimeout(r, 0));

suite("the kernel glue", () => {
  it("sends the magic silently and reads an error or stderr as failure", async () => {
    const ok = connection("python", { status: "ok" });
    expect(await silentRun(ok.kernel)(ON)).toBeNull();
    expect(ok.requests).toEqual([{ code: ON, silent: true, store_history: false }]);
    const missing = connection("python", {
      status: "error",
      ename: "ModuleNotFoundError",
      evalue: "no pagelab",
    });
    expect(await silentRun(missing.kernel)(ON)).toBe("ModuleNotFoundError: no pagelab");
    const refused = connection("python", { status: "ok" }, "pagelab: autocount: no counters\n");
    expect(await silentRun(refused.kernel)(ON)).toBe("pagelab: autocount: no counters");
  });

  it("adds an idle Python kernel, drops it when it restarts, and leaves other languages alone", async () => {
    const a = new AutoCount();
    a.setEnabled(true);
    const py = connection("python", { status: "ok" });
    trackKernel(a, py.kernel);
    await tick();
    expect(py.requests.map((r) => r.code)).toEqual([ON]);
    py.k.status = "restarting";
    trackKernel(a, py.kernel);
    expect(a.state("k1")).toBeNull();
    py.k.status = "idle";
    trackKernel(a, py.kernel);
    await tick();
    expect(py.requests.map((r) => r.code)).toEqual([ON, ON]);
    const b = new AutoCount();
    b.setEnabled(true);
    const julia = connection("julia", { status: "ok" });
    trackKernel(b, julia.kernel);
    await tick();
    expect(julia.requests).toEqual([]);
    expect(b.state("k1")).toBeNull();
  });
});
