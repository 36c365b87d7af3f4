import { describe, expect, it } from "vitest";
import { latest, toBatch, type IKernelCounters, type IKernelsReply } from "../src/kernels";
import { KernelList } from "../src/panel";
import { KernelStream, streamUrl } from "../src/stream";
import { KernelStatus } from "../src/statusitem";

const series = [
  { name: "page-faults", unit: "", source: "sw", reason: "", note: "main thread" },
  { name: "task-clock", unit: "ns", source: "sw", reason: "<b>seccomp</b> denies it", note: "" },
  { name: "rss", unit: "KiB", source: "rusage", reason: "", note: "/proc/PID/status VmRSS" },
];

function kernel(id: string, samples: (number | null)[][]): IKernelCounters {
  return { id, name: "python3", pid: 42, execution_state: "idle", series, samples };
}

function reply(kernels: IKernelCounters[]): IKernelsReply {
  return { version: "0.0.0", now: 9, interval_ms: 100, sampling_error: null, note: "", kernels };
}

describe("kernel replies", () => {
  it("turn rows into a batch with null as NaN, never 0", () => {
    const b = toBatch(
      kernel("a", [
        [1, 10, null, 2048],
        [2, 30, null, 4096],
      ]),
    );
    expect(Array.from(b.times)).toEqual([1, 2]);
    expect(b.counters).toBe(3);
    expect(b.values[0]).toBe(10);
    expect(Number.isNaN(b.values[1])).toBe(true);
    expect(b.values[5]).toBe(4096);
  });

  it("know the newest sample time across kernels", () => {
    expect(latest(reply([kernel("a", [[1, 0, 0, 0]]), kernel("b", [[3, 0, 0, 0]])]))).toBe(3);
    expect(latest(reply([kernel("a", [])]))).toBeNull();
  });
});

describe("KernelList", () => {
  it("shows one view per kernel with totals, sources and reasons, and drops ended kernels", () => {
    const list = new KernelList();
    list.update(
      reply([kernel("a", [[1, 100, null, 2048]]), kernel("b", [[1, 5, null, 1024]])]),
      null,
    );
    list.update(reply([kernel("a", [[2, 65636, null, 264192]]), kernel("b", [])]), null);
    list.draw();
    const a = list.root.querySelector('[data-kernel="a"]')!;
    const pf = a.querySelector('[data-counter="page-faults"]')!;
    expect(pf.querySelector(".pl-total")!.textContent).toBe("65,636");
    expect(pf.querySelector(".pl-rate")!.textContent).toBe("65.5k/s");
    expect(pf.querySelector(".pl-source")!.textContent).toBe("sw");
    const tc = a.querySelector('[data-counter="task-clock"]')!;
    expect(tc.querySelector(".pl-total")!.textContent).toBe("n/a");
    expect(tc.querySelector(".pl-reason")!.textContent).toContain("<b>seccomp</b>");
    expect(list.root.querySelector("b")).toBeNull(); // text, never HTML
    expect(a.querySelector("button")).toBeNull(); // the panel has no widget controls
    const rss = a.querySelector('[data-counter="rss"]')!;
    expect(rss.querySelector(".pl-total")!.textContent).toBe("258 MiB"); // a level, as it is
    expect(rss.querySelector(".pl-rate")).toBeNull();
    expect(a.getAttribute("aria-label")).toBe("python3 kernel, pid 42");
    list.update(reply([kernel("b", [])]), null);
    expect(list.root.querySelector('[data-kernel="a"]')).toBeNull();
    expect(list.root.querySelector('[data-kernel="b"]')).not.toBeNull();
  });

  it("is a labelled region whose status line is a live region", () => {
    const list = new KernelList();
    expect(list.root.getAttribute("role")).toBe("region");
    expect(list.root.getAttribute("aria-label")).toBe("pagelab kernel counters");
    expect(list.root.querySelector('[data-pagelab="panel-status"]')!.getAttribute("role")).toBe(
      "status",
    );
  });

  it("says why there is nothing to show", () => {
    const list = new KernelList();
    list.update(null, "HTTP 403");
    expect(list.root.textContent).toContain("HTTP 403");
    list.update(reply([]), null);
    expect(list.root.textContent).toContain("none of your kernels is running");
  });

  it("says when the server's sampling failed, and the server's note", () => {
    const list = new KernelList();
    const failed = { ...reply([kernel("a", [])]), sampling_error: "sampling failed (OSError: x)" };
    list.update(failed, null);
    const status = list.root.querySelector('[data-pagelab="panel-status"]')!;
    expect(status.textContent).toBe("pagelab: sampling failed (OSError: x)");
    list.update({ ...reply([kernel("a", [])]), interval_ms: 500, note: "at most 2 Hz" }, null);
    expect(status.textContent).toBe("1 kernel, sampled every 500 ms (pagelab 0.0.0); at most 2 Hz");
  });
});

describe("KernelStatus", () => {
  it("shows the followed kernel's fault rate with its source and its RSS", () => {
    const s = new KernelStatus();
    expect(s.text()).toBe("");
    s.follow("a");
    s.update(
      reply([
        kernel("a", [
          [0, 0, null, 2048],
          [0.5, 1000, null, 1536 * 1024],
        ]),
      ]),
    );
    expect(s.text()).toBe("faults 2k/s (sw) · RSS 1.5 GiB");
    s.follow("b");
    expect(s.text()).toBe("faults n/a · RSS n/a");
  });
});

describe("KernelStream", () => {
  function fakeServer() {
    const sockets: {
      query: string;
      send: (msg: object) => void;
      drop: (code?: number, reason?: string) => void;
      closed: boolean;
    }[] = [];
    const connect = (
      query: string,
      onMessage: (d: string) => void,
      onClose: (code: number, reason: string) => void,
    ) => {
      const s = {
        query,
        closed: false,
        send: (msg: object) => onMessage(JSON.stringify(msg)),
        drop: (code = 1006, reason = "") => onClose(code, reason),
      };
      sockets.push(s);
      return { close: () => (s.closed = true) };
    };
    return { sockets, connect };
  }

  function manualTimers() {
    const timers: (() => void)[] = [];
    const later = (cb: () => void) => {
      timers.push(cb);
      return 0 as unknown as ReturnType<typeof setTimeout>;
    };
    return { timers, later };
  }

  it("opens one socket for all listeners and closes it when the last one leaves", () => {
    const server = fakeServer();
    const stream = new KernelStream(server.connect);
    stream.configure(100, ["page-faults", "minor-faults"]);
    const a: number[] = [];
    const b: number[] = [];
    const stopA = stream.subscribe((r) => a.push(r!.kernels.length));
    const stopB = stream.subscribe((r) => b.push(r!.kernels.length));
    expect(server.sockets.length).toBe(1);
    expect(server.sockets[0].query).toBe("interval_ms=100&events=page-faults%2Cminor-faults");
    server.sockets[0].send(reply([kernel("a", [[1, 0, null, 0]])]));
    expect(a).toEqual([1]);
    expect(b).toEqual([1]);
    stopA();
    expect(stream.connected).toBe(true);
    stopB();
    expect(stream.connected).toBe(false);
    expect(server.sockets[0].closed).toBe(true);
  });

  it("reconnects with new settings, and after a drop says why and tries again", () => {
    const server = fakeServer();
    const { timers, later } = manualTimers();
    const stream = new KernelStream(server.connect, later);
    const errors: (string | null)[] = [];
    stream.subscribe((_r, e) => errors.push(e));
    stream.configure(50, []);
    expect(server.sockets.length).toBe(2);
    expect(server.sockets[0].closed).toBe(true);
    expect(server.sockets[1].query).toBe("interval_ms=50");
    server.sockets[1].drop();
    expect(errors).toEqual(["the counter stream closed (1006)"]);
    expect(stream.connected).toBe(false);
    timers.shift()!();
    expect(server.sockets.length).toBe(3);
  });

  it("shows the server's sentence for a refused query and retries only for new settings", () => {
    const server = fakeServer();
    const { timers, later } = manualTimers();
    const stream = new KernelStream(server.connect, later);
    const errors: (string | null)[] = [];
    stream.configure(100, ["nope"]);
    stream.subscribe((_r, e) => errors.push(e));
    const sentence = "unknown event 'nope'; `pagelab doctor` lists them";
    server.sockets[0].send({ error: sentence });
    server.sockets[0].drop(4400, sentence.slice(0, 20));
    expect(errors).toEqual([sentence]);
    expect(timers.length).toBe(0); // retrying the same query cannot help
    const late: (string | null)[] = [];
    stream.subscribe((_r, e) => late.push(e));
    expect(late).toEqual([sentence]); // a listener that comes later is told too
    expect(server.sockets.length).toBe(1);
    stream.configure(100, ["page-faults"]);
    expect(server.sockets.length).toBe(2);
    server.sockets[1].drop(4403, "the kernel panel is turned off");
    expect(errors[errors.length - 1]).toBe("the kernel panel is turned off");
  });

  it("fills in the series the server leaves out while they are unchanged", () => {
    const server = fakeServer();
    const stream = new KernelStream(server.connect);
    const got: IKernelsReply[] = [];
    stream.subscribe((r) => got.push(r!));
    server.sockets[0].send(reply([kernel("a", [[1, 5, null, 0]])]));
    const { series: _, ...bare } = kernel("a", [[2, 7, null, 0]]);
    server.sockets[0].send(reply([bare as IKernelCounters]));
    expect(got[1].kernels[0].series).toEqual(series);
  });

  it("closes its socket while the page is hidden and opens it again when shown", () => {
    const server = fakeServer();
    const stream = new KernelStream(server.connect);
    stream.subscribe(() => {});
    stream.setHidden(true);
    expect(server.sockets[0].closed).toBe(true);
    expect(stream.connected).toBe(false);
    stream.configure(200, []); // a settings change while hidden opens nothing
    expect(server.sockets.length).toBe(1);
    stream.setHidden(false);
    expect(server.sockets.length).toBe(2);
    expect(server.sockets[1].query).toBe("interval_ms=200");
  });
});

describe("streamUrl", () => {
  const base = { wsUrl: "wss://hub.example/user/ann/", token: "s3cr&t" };

  it("leaves the token out unless the page config says appendToken", () => {
    expect(streamUrl({ ...base, appendToken: false }, "interval_ms=100")).toBe(
      "wss://hub.example/user/ann/pagelab/kernels/stream?interval_ms=100",
    );
  });

  it("appends the token, escaped, where appendToken is set", () => {
    expect(streamUrl({ ...base, appendToken: true }, "interval_ms=100")).toBe(
      "wss://hub.example/user/ann/pagelab/kernels/stream?interval_ms=100&token=s3cr%26t",
    );
    expect(streamUrl({ ...base, token: "", appendToken: true }, "a=1")).not.toContain("token");
  });
});
