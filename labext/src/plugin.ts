// Registration: the anywidget entry point. It binds the model (synced traits, custom messages)
// to a LiveView and its controls; nothing else in the front end talks to the model. The look
// comes with the model (`_css`, the lab extension's style file).

import { Controls } from "./controls";
import { plain } from "./i18n";
import { decodeSamples, type ICounterInfo, type KernelMessage, type ViewMessage } from "./protocol";
import { Throttle } from "./throttle";
import { VERSION } from "./version";
import { LiveView } from "./view";

interface IModel {
  get(name: string): unknown;
  send(content: ViewMessage): void;
  on(event: string, cb: (...args: any[]) => void): void;
  off(event: string, cb: (...args: any[]) => void): void;
}

function render({ model, el }: { model: IModel; el: HTMLElement }): () => void {
  const controls = new Controls((type) => model.send({ type }), plain);
  const view = new LiveView({ version: VERSION, controls: controls.node });
  const throttle = new Throttle(() => view.draw(), 30);
  const onCounters = () => {
    view.setCounters(model.get("counters") as ICounterInfo[]);
    throttle.request();
  };
  const onRunning = () => {
    const running = Boolean(model.get("running"));
    view.setRunning(running);
    controls.setRunning(running);
  };
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
