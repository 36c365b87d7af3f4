// `%%c` cells in C: a Python cell whose first line is pagelab's C-cell magic holds C, so its
// editor takes C's CodeMirror language, and the kernel's again once the first line says
// otherwise. JupyterLab picks an editor's language from its model's mimeType, which the notebook
// and the console set for every cell whenever the kernel's language is known: the cell takes
// C again at once.

import type { ISignal } from "@lumino/signaling";

/** The mimeType JupyterLab's language registry gives C (CodeMirror's C++ grammar, C dialect). */
export const C_MIME = "text/x-csrc";

const C_MAGIC = /^%%c(?:[ \t]|\r?\n|$)/;

/** What of a cell's editor model (CodeEditor.IModel) the highlighting reads and sets. */
export interface ICellEditorModel {
  mimeType: string;
  readonly mimeTypeChanged: ISignal<unknown, { newValue: string }>;
  readonly sharedModel: { getSource(): string; readonly changed: ISignal<unknown, unknown> };
}

/** Whether a cell's source is a `%%c` cell: the magic alone, or with options, on line one. */
export function isCCell(source: string): boolean {
  return C_MAGIC.test(source);
}

/** Keep the model's mimeType C while it is a `%%c` cell of a Python kernel (IPython's magic),
 * and the kernel's language otherwise. */
export function highlightCCells(model: ICellEditorModel): void {
  let kernel = model.mimeType; // the host's language, given back when the cell is no %%c cell
  const apply = () => {
    const c = /python/.test(kernel) && isCCell(model.sharedModel.getSource());
    const want = c ? C_MIME : kernel;
    if (model.mimeType !== want) model.mimeType = want;
  };
  model.mimeTypeChanged.connect((_, change) => {
    if (change.newValue !== C_MIME) kernel = change.newValue;
    apply();
  });
  model.sharedModel.changed.connect(apply);
  apply();
}
