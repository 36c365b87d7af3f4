import { Signal } from "@lumino/signaling";
import { describe, expect, it } from "vitest";
import { C_MIME, highlightCCells, isCCell } from "../src/ccells";

/** A cell editor's model as JupyterLab's behaves: setting mimeType signals the change. */
class FakeModel {
  readonly mimeTypeChanged = new Signal<this, { newValue: string }>(this);
  readonly sharedModel = {
    source: "",
    changed: new Signal<unknown, unknown>(this),
    getSource(): string {
      return this.source;
    },
  };
  private mime: string;

  constructor(mime: string, source: string) {
    this.mime = mime;
    this.sharedModel.source = source;
  }

  get mimeType(): string {
    return this.mime;
  }

  set mimeType(value: string) {
    if (value === this.mime) return;
    this.mime = value;
    this.mimeTypeChanged.emit({ newValue: value });
  }

  type(source: string): void {
    this.sharedModel.source = source;
    this.sharedModel.changed.emit(undefined);
  }
}

describe("%%c cells", () => {
  it("knows the magic on the first line only, alone or with options", () => {
    expect(isCCell("%%c\nint main(void) { return 0; }")).toBe(true);
    expect(isCCell("%%c --sim\nint x;")).toBe(true);
    expect(isCCell("%%c")).toBe(true);
    expect(isCCell("%%counters\nx = 1")).toBe(false);
    expect(isCCell("x = 1\n%%c")).toBe(false);
    expect(isCCell(" %%c\n")).toBe(false);
  });

  it("switches a Python cell to C and back as its first line changes", () => {
    const model = new FakeModel("text/x-ipython", "%%c\nint x;");
    highlightCCells(model);
    expect(model.mimeType).toBe(C_MIME);
    model.type("x = 1");
    expect(model.mimeType).toBe("text/x-ipython");
    model.type("%%c\nint y;");
    expect(model.mimeType).toBe(C_MIME);
  });

  it("stays C when the notebook sets the kernel's language, and gives that one back", () => {
    const model = new FakeModel("text/plain", "%%c\nint x;");
    highlightCCells(model);
    expect(model.mimeType).toBe("text/plain"); // no kernel yet: not an IPython magic
    model.mimeType = "text/x-ipython"; // the kernel's language arrives
    expect(model.mimeType).toBe(C_MIME);
    model.type("print(1)");
    expect(model.mimeType).toBe("text/x-ipython");
  });

  it("leaves cells of other kernels alone", () => {
    const model = new FakeModel("text/x-rsrc", "%%c\nx <- 1");
    highlightCCells(model);
    expect(model.mimeType).toBe("text/x-rsrc");
  });
});
