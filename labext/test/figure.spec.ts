import type { IRenderMimeRegistry } from "@jupyterlab/rendermime";
import type { IRenderMime } from "@jupyterlab/rendermime-interfaces";
import { Signal } from "@lumino/signaling";
import { Widget } from "@lumino/widgets";
import { describe, expect, it } from "vitest";
import { PLOTLY, THEMED, ThemedFigure, themed } from "../src/figure";

const DARK = { layout: { paper_bgcolor: "rgb(17,17,17)" } };
const FIGURE = {
  data: [{ type: "bar", y: [1] }],
  layout: { title: "t", template: { layout: {} } },
};

/** A registry whose plotly renderer records the figure each draw gets. */
function registry(drawn: unknown[], plotly = true) {
  return {
    getFactory: (mime: string) => (mime === PLOTLY && plotly ? {} : undefined),
    createRenderer: (mime: string) => {
      const w = new Widget() as Widget & IRenderMime.IRenderer;
      w.renderModel = async (model) => {
        drawn.push([mime, model.data[mime]]);
      };
      return w;
    },
  } as unknown as IRenderMimeRegistry;
}

function model(): IRenderMime.IMimeModel {
  return {
    trusted: true,
    data: { [PLOTLY]: FIGURE, [THEMED]: { dark: DARK }, "text/html": "<div>figure</div>" },
    metadata: {},
    setData: () => {},
  } as unknown as IRenderMime.IMimeModel;
}

describe("themed", () => {
  it("swaps in the dark template and keeps the rest of the figure", () => {
    const f = themed(FIGURE, DARK);
    expect(f.layout).toEqual({ title: "t", template: DARK });
    expect(f.data).toBe(FIGURE.data);
    expect(themed(FIGURE, null)).toBe(FIGURE);
  });
});

describe("ThemedFigure", () => {
  it("draws with plotly's renderer in the theme, and again when the theme changes", async () => {
    const drawn: unknown[] = [];
    let dark = false;
    const changed = new Signal<unknown, unknown>({});
    const figure = new ThemedFigure(registry(drawn), { dark: () => dark, changed });
    await figure.renderModel(model());
    expect(drawn).toEqual([[PLOTLY, FIGURE]]);
    dark = true;
    changed.emit(null);
    expect(drawn[1]).toEqual([PLOTLY, themed(FIGURE, DARK)]);
    figure.dispose();
    changed.emit(null); // a disposed figure listens no more
    expect(drawn.length).toBe(2);
  });

  it("shows the stored HTML where plotly's renderer is not installed", async () => {
    const drawn: unknown[] = [];
    const figure = new ThemedFigure(registry(drawn, false), { dark: () => true, changed: null });
    await figure.renderModel(model());
    expect(drawn).toEqual([["text/html", "<div>figure</div>"]]);
  });
});
