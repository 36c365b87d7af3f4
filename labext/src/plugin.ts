// Registration: the anywidget entry point. It binds the model (synced traits, custom messages)
// to a LiveView; nothing else in the front end talks to the model.

import { decodeSamples, type CounterInfo, type KernelMessage, type ViewMessage } from "./protocol";
import { addStyle } from "./style";
import { Throttle } from "./throttle";
import { VERSION } from "./version";
import { LiveView } from "./view";

interface Model {
  get(name: string): unknown;
  send(content: ViewMessage): void;
  on(event: string, cb: (...args: any[]) => void): void;
  off(event: string, cb: (...args: any[]) => void): void;
}

function render({ model, el }: { model: Model; el: HTMLElement }): () => void {
  addStyle(el.ownerDocument);
  const view = new LiveView((action) => model.send({ type: action }), VERSION);
  const throttle = new Throttle(() => view.draw(), 30);
  const onCounters = () => {
    view.setCounters(model.get("counters") as CounterInfo[]);
    throttle.request();
  };
  const onRunning = () => view.setRunning(Boolean(model.get("running")));
  const onTarget = () => view.setTarget(String(model.get("target")));
  const onMessage = (msg: KernelMessage, buffers: (ArrayBuffer | DataView)[]) => {
    if (msg.type === "reset") view.clear();
    else if (msg.type === "samples") view.add(decodeSamples(msg, buffers));
    throttle.request();
  };
  onTarget();
  onRunning();
  onCounters();
  model.on("change:counters", onCounters);
  model.on("change:running", onRunning);
  model.on("change:target", onTarget);
  model.on("msg:custom", onMessage);
  el.append(view.root);
  return () => {
    model.off("change:counters", onCounters);
    model.off("change:running", onRunning);
    model.off("change:target", onTarget);
    model.off("msg:custom", onMessage);
  };
}

export default { render };
