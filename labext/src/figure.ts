// pagelab's figures in JupyterLab's theme. A figure in plotly's default template (the user set
// none) comes with a second mimetype, THEMED, that holds plotly's dark template. This renderer,
// ranked before plotly's own, draws the figure with plotly's renderer, with that template while
// the theme is dark, and again whenever the theme changes. A figure in a template the user chose
// has no THEMED part, so plotly's renderer draws it as it is.

import type { IRenderMimeRegistry } from "@jupyterlab/rendermime";
import type { IRenderMime } from "@jupyterlab/rendermime-interfaces";
import type { ISignal } from "@lumino/signaling";
import { PanelLayout, Widget } from "@lumino/widgets";

export const THEMED = "application/vnd.pagelab.themed-figure+json";
export const PLOTLY = "application/vnd.plotly.v1+json";

interface IFigure {
  layout?: Record<string, unknown>;
  [key: string]: unknown;
}

/** The figure to draw: its own, or with ``dark`` as its template while the theme is dark. */
export function themed(figure: IFigure, dark: Record<string, unknown> | null): IFigure {
  return dark ? { ...figure, layout: { ...figure.layout, template: dark } } : figure;
}

/** The theme as the figures see it: whether it is dark now, and when it changes. */
export interface ITheme {
  dark(): boolean;
  changed: ISignal<unknown, unknown> | null;
}

export class ThemedFigure extends Widget implements IRenderMime.IRenderer {
  private model: IRenderMime.IMimeModel | null = null;

  constructor(
    private readonly rendermime: IRenderMimeRegistry,
    private readonly theme: ITheme,
  ) {
    super();
    this.addClass("pagelab-figure");
    this.layout = new PanelLayout();
    theme.changed?.connect(this.redraw, this);
  }

  renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    this.model = model;
    return this.draw();
  }

  dispose(): void {
    this.theme.changed?.disconnect(this.redraw, this);
    super.dispose();
  }

  private redraw(): void {
    if (this.model && !this.isDisposed) void this.draw();
  }

  /** A fresh plotly renderer (it draws a model once), in place of the last one, then drawn;
   * the stored HTML where plotly's renderer is not installed. */
  private draw(): Promise<void> {
    const { data: bundle, metadata, trusted } = this.model!;
    const plotly = this.rendermime.getFactory(PLOTLY) !== undefined;
    const dark = plotly && this.theme.dark() ? (bundle[THEMED] as { dark: IFigure }).dark : null;
    const mime = plotly ? PLOTLY : "text/html";
    const shown = plotly ? themed(bundle[PLOTLY] as IFigure, dark) : bundle[mime];
    const inner = this.rendermime.createRenderer(mime);
    const layout = this.layout as PanelLayout;
    for (const old of [...layout.widgets]) old.dispose();
    layout.addWidget(inner);
    // plotly's renderer stores a PNG of what it drew with setData: not into this output
    const data = { [mime]: shown } as IRenderMime.IMimeModel["data"];
    return inner.renderModel({ data, metadata, trusted, setData: () => {} });
  }
}
