// Registration for JupyterLab 4 and Notebook 7 (plugin.ts registers the widget's anywidget
// view): the kernel panel in the left side bar and the command that shows it, the status-bar
// item, the autocount setting's silent magic in each notebook kernel, and their settings; the
// renderer that draws pagelab's figures in the theme; and C's highlighting for `%%c` cells. Strings go through ITranslator; the
// look is the extension's style (style/index.css), which JupyterLab loads with it.

import type { JupyterFrontEnd, JupyterFrontEndPlugin } from "@jupyterlab/application";
import { ICommandPalette, IThemeManager } from "@jupyterlab/apputils";
import type { ICellModel } from "@jupyterlab/cells";
import { IConsoleTracker, type ConsolePanel } from "@jupyterlab/console";
import { INotebookTracker, type NotebookPanel } from "@jupyterlab/notebook";
import { IRenderMimeRegistry } from "@jupyterlab/rendermime";
import { ServerConnection } from "@jupyterlab/services";
import { ISettingRegistry } from "@jupyterlab/settingregistry";
import { IStatusBar } from "@jupyterlab/statusbar";
import { ITranslator, nullTranslator } from "@jupyterlab/translation";
import { LabIcon } from "@jupyterlab/ui-components";
import { Widget } from "@lumino/widgets";

import { AutoCount, describe, trackKernel } from "./autocount";
import { highlightCCells } from "./ccells";
import { THEMED, ThemedFigure } from "./figure";
import type { ITrans } from "./i18n";
import { KernelList } from "./panel";
import { KernelStream, streamUrl, type Connect } from "./stream";
import { KernelStatus } from "./statusitem";
import { Throttle } from "./throttle";

const PLUGIN_ID = "pagelab:plugin";
const PANEL_ID = "pagelab-kernels";
const SHOW_PANEL = "pagelab:show-kernel-panel";
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
  const ws = new settings.WebSocket(streamUrl(settings, query));
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
  readonly list: KernelList;
  private readonly throttle = new Throttle(() => this.list.draw(), 30);
  private unsubscribe: (() => void) | null = null;

  constructor(
    private readonly stream: KernelStream,
    trans: ITrans,
  ) {
    super();
    this.list = new KernelList(trans);
    this.id = PANEL_ID;
    this.title.icon = ICON;
    this.title.caption = trans.__("pagelab: live counters of your kernels");
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
  optional: [INotebookTracker, IStatusBar, ISettingRegistry, ITranslator, ICommandPalette],
  activate: (
    app: JupyterFrontEnd,
    tracker: INotebookTracker | null,
    statusBar: IStatusBar | null,
    registry: ISettingRegistry | null,
    translator: ITranslator | null,
    palette: ICommandPalette | null,
  ) => {
    const trans = (translator ?? nullTranslator).load("pagelab");
    const stream = new KernelStream(connect);
    // a hidden tab costs nothing: no socket, so the server samples nothing for it
    const standby = () => stream.setHidden(document.visibilityState === "hidden");
    document.addEventListener("visibilitychange", standby);
    standby();
    const panel = new KernelPanel(stream, trans);
    app.shell.add(panel, "left", { rank: 900 });
    app.commands.addCommand(SHOW_PANEL, {
      label: trans.__("Show Kernel Counters"),
      caption: trans.__("Open the side panel of live counters for each of your kernels"),
      icon: ICON,
      execute: () => app.shell.activateById(PANEL_ID),
    });
    palette?.addItem({ command: SHOW_PANEL, category: trans.__("pagelab") });

    const status = new KernelStatus(trans);
    const item = new Widget();
    item.addClass("pagelab-status");
    item.node.dataset.pagelab = "kernel-status";
    let stopStatus: (() => void) | null = null;
    let statusWanted = true;
    let current: string | null = null;
    const draw = () => {
      const counts = describe(autocount.state(current ?? ""), trans);
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

/** pagelab's figures, drawn by plotly's renderer in the theme (see figure.ts). */
const figures: JupyterFrontEndPlugin<void> = {
  id: "pagelab:figures",
  description: "pagelab's plotly figures in JupyterLab's light or dark theme.",
  autoStart: true,
  requires: [IRenderMimeRegistry],
  optional: [IThemeManager],
  activate: (
    _app: JupyterFrontEnd,
    rendermime: IRenderMimeRegistry,
    themes: IThemeManager | null,
  ) => {
    const theme = {
      dark: () => themes !== null && themes.theme !== null && !themes.isLight(themes.theme),
      changed: themes?.themeChanged ?? null,
    };
    const createRenderer = () => new ThemedFigure(rendermime, theme);
    // ranked before plotly's own renderer (rank 2), which draws the figure for it
    rendermime.addFactory({ safe: true, mimeTypes: [THEMED], createRenderer }, 1);
  },
};

/** `%%c` cells highlighted as C in notebooks and consoles (see ccells.ts). */
const cCells: JupyterFrontEndPlugin<void> = {
  id: "pagelab:c-cells",
  description: "pagelab's %%c cells highlighted as C in notebooks and consoles.",
  autoStart: true,
  optional: [INotebookTracker, IConsoleTracker],
  activate: (
    _app: JupyterFrontEnd,
    notebooks: INotebookTracker | null,
    consoles: IConsoleTracker | null,
  ) => {
    const followed = new WeakSet<ICellModel>(); // a moved cell comes back as added
    const follow = (cell: ICellModel) => {
      if (cell.type !== "code" || followed.has(cell)) return;
      followed.add(cell);
      highlightCCells(cell);
    };
    const watch = (nb: NotebookPanel) => {
      const cells = nb.content.model?.cells;
      if (!cells) return;
      for (const cell of cells) follow(cell);
      cells.changed.connect((_, change) => {
        if (change.type === "add") change.newValues.forEach(follow);
      });
    };
    notebooks?.widgetAdded.connect((_, nb) => watch(nb));
    notebooks?.forEach(watch);
    const watchConsole = (panel: ConsolePanel) => {
      const prompt = panel.console.promptCell;
      if (prompt) follow(prompt.model);
      panel.console.promptCellCreated.connect((_, cell) => follow(cell.model));
    };
    consoles?.widgetAdded.connect((_, panel) => watchConsole(panel));
    consoles?.forEach(watchConsole);
  },
};

export default [plugin, figures, cCells];
