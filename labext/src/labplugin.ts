// Registration for JupyterLab 4 and Notebook 7 (plugin.ts registers the widget's anywidget
// view): the kernel panel in the left side bar, the status-bar item, the autocount setting's
// silent magic in each notebook kernel, and their settings.

import type { JupyterFrontEnd, JupyterFrontEndPlugin } from "@jupyterlab/application";
import { INotebookTracker, type NotebookPanel } from "@jupyterlab/notebook";
import { ServerConnection } from "@jupyterlab/services";
import { ISettingRegistry } from "@jupyterlab/settingregistry";
import { IStatusBar } from "@jupyterlab/statusbar";
import { LabIcon } from "@jupyterlab/ui-components";
import { Widget } from "@lumino/widgets";

import { AutoCount, describe, trackKernel } from "./autocount";
import { KernelList } from "./panel";
import { KernelStream, type Connect } from "./stream";
import { KernelStatus } from "./statusitem";
import { addStyle } from "./style";
import { Throttle } from "./throttle";
import { VERSION } from "./version";

const PLUGIN_ID = "pagelab:plugin";
// The side-bar tab: a sparkline over a page.
const ICON = new LabIcon({
  name: "pagelab:kernels",
  svgstr:
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24"><g class="jp-icon3" fill="#616161">' +
    '<path d="M5 2h10l4 4v16H5zm2 2v16h10V7h-3V4z"/>' +
    '<path d="M8 16l2.5-4 2 2.5L15 9l1 .6-3.3 6.4-2-2.5L9 16.6z"/></g></svg>',
});

const connect: Connect = (query, onMessage, onClose) => {
  const settings = ServerConnection.makeSettings();
  let url = `${settings.wsUrl}pagelab/kernels/stream?${query}`;
  if (settings.token) url += `&token=${encodeURIComponent(settings.token)}`;
  const ws = new settings.WebSocket(url);
  ws.onmessage = (e: MessageEvent) => onMessage(String(e.data));
  ws.onclose = (e: CloseEvent) => onClose(e.code, e.reason);
  return {
    close: () => {
      ws.onclose = null;
      ws.close();
    },
  };
};

/** The side panel: subscribed to the stream only while it is visible. */
class KernelPanel extends Widget {
  readonly list = new KernelList(VERSION);
  private readonly throttle = new Throttle(() => this.list.draw(), 30);
  private unsubscribe: (() => void) | null = null;

  constructor(private readonly stream: KernelStream) {
    super();
    this.id = "pagelab-kernels";
    this.title.icon = ICON;
    this.title.caption = "pagelab: live counters of your kernels";
    this.addClass("pagelab-kernels");
    this.node.append(this.list.root);
  }

  protected onAfterShow(): void {
    this.unsubscribe ??= this.stream.subscribe((reply, error) => {
      this.list.update(reply, error);
      this.throttle.request();
    });
  }

  protected onAfterHide(): void {
    this.unsubscribe?.();
    this.unsubscribe = null;
  }

  dispose(): void {
    this.onAfterHide();
    super.dispose();
  }
}

const plugin: JupyterFrontEndPlugin<void> = {
  id: PLUGIN_ID,
  description: "Live per-kernel counters: a side panel and a status-bar item.",
  autoStart: true,
  optional: [INotebookTracker, IStatusBar, ISettingRegistry],
  activate: (
    app: JupyterFrontEnd,
    tracker: INotebookTracker | null,
    statusBar: IStatusBar | null,
    registry: ISettingRegistry | null,
  ) => {
    addStyle(document);
    const stream = new KernelStream(connect);
    // a hidden tab costs nothing: no socket, so the server samples nothing for it
    const standby = () => stream.setHidden(document.visibilityState === "hidden");
    document.addEventListener("visibilitychange", standby);
    standby();
    const panel = new KernelPanel(stream);
    app.shell.add(panel, "left", { rank: 900 });

    const status = new KernelStatus();
    const item = new Widget();
    item.addClass("pagelab-status");
    item.node.dataset.pagelab = "kernel-status";
    let stopStatus: (() => void) | null = null;
    let statusWanted = true;
    let current: string | null = null;
    const draw = () => {
      const counts = describe(autocount.state(current ?? ""));
      item.node.textContent = [status.text(), counts.text].filter(Boolean).join(" · ");
      item.node.title = counts.title;
    };
    const autocount = new AutoCount((id) => id === current && draw());
    const follow = () => {
      const kernel = tracker?.currentWidget?.sessionContext.session?.kernel ?? null;
      current = kernel ? kernel.id : null;
      status.follow(current);
      draw();
      const want = statusWanted && kernel !== null;
      if (want && !stopStatus) {
        stopStatus = stream.subscribe((reply) => {
          status.update(reply);
          draw();
        });
      } else if (!want && stopStatus) {
        stopStatus();
        stopStatus = null;
      }
    };
    const watch = (nb: NotebookPanel) => {
      const context = nb.sessionContext;
      const track = () => {
        const kernel = context.session?.kernel;
        if (kernel) trackKernel(autocount, kernel);
      };
      context.kernelChanged.connect(follow);
      context.kernelChanged.connect(track);
      context.statusChanged.connect(track);
      track();
    };
    if (tracker) {
      tracker.currentChanged.connect(follow);
      tracker.widgetAdded.connect((_, nb) => watch(nb));
      tracker.forEach(watch);
    }
    if (tracker && statusBar) {
      statusBar.registerStatusItem(PLUGIN_ID, {
        item,
        align: "left",
        rank: 5,
        isActive: () => tracker.currentWidget !== null,
      });
    }

    if (registry) {
      void registry.load(PLUGIN_ID).then((settings) => {
        const apply = () => {
          stream.configure(
            settings.get("refreshMs").composite as number,
            settings.get("events").composite as string[],
          );
          statusWanted = settings.get("statusBar").composite as boolean;
          autocount.setEnabled(settings.get("autocount").composite as boolean);
          follow();
        };
        settings.changed.connect(apply);
        apply();
      });
    } else {
      follow();
    }
  },
};

export default plugin;
