// The widget's controls, drawn as JupyterLab draws its toolbar buttons (its classes and its own
// run, stop and refresh icons, which the theme recolours): one button that stops or starts the
// sampling, and one that starts the totals from zero again.

import runIcon from "@jupyterlab/ui-components/style/icons/toolbar/run.svg";
import stopIcon from "@jupyterlab/ui-components/style/icons/toolbar/stop.svg";
import resetIcon from "@jupyterlab/ui-components/style/icons/toolbar/refresh.svg";

import type { ITrans } from "./i18n";
import type { ViewMessage } from "./protocol";

function button(className: string, onClick: () => void): HTMLButtonElement {
  const b = document.createElement("button");
  b.type = "button";
  b.className = `jp-ToolbarButtonComponent jp-Button jp-mod-minimal ${className}`;
  b.addEventListener("click", onClick);
  return b;
}

/** Icon and label of a button; the icon is one of the SVG files above, never kernel text. */
function show(b: HTMLButtonElement, icon: string, label: string, tip: string): void {
  const i = document.createElement("span");
  i.className = "jp-ToolbarButtonComponent-icon";
  i.setAttribute("aria-hidden", "true");
  i.innerHTML = icon;
  const l = document.createElement("span");
  l.className = "jp-ToolbarButtonComponent-label";
  l.textContent = label;
  b.replaceChildren(i, l);
  b.title = tip;
}

export class Controls {
  readonly node: HTMLElement;
  private readonly toggle: HTMLButtonElement;
  private running = false;

  constructor(
    send: (action: ViewMessage["type"]) => void,
    private readonly trans: ITrans,
  ) {
    this.node = document.createElement("div");
    this.node.className = "pl-controls";
    this.node.setAttribute("role", "toolbar");
    this.node.setAttribute("aria-label", trans.__("sampling controls"));
    this.toggle = button("pl-toggle", () => send(this.running ? "stop" : "start"));
    const reset = button("pl-reset", () => send("reset"));
    show(reset, resetIcon, trans.__("Reset"), trans.__("Start the totals from zero"));
    this.node.append(this.toggle, reset);
    this.setRunning(false);
  }

  setRunning(running: boolean): void {
    this.running = running;
    const t = this.trans;
    if (running) show(this.toggle, stopIcon, t.__("Stop"), t.__("Stop sampling (totals stay)"));
    else show(this.toggle, runIcon, t.__("Start"), t.__("Start sampling again"));
  }
}
