// Strings go through a translation bundle: JupyterLab's ITranslator in the lab extension
// (translator.load("pagelab")), and `plain` in the widget, which has no JupyterLab to ask. Both
// fill placeholders as gettext does: %1, %2, ... are the arguments; in _n, %1 is the count.

/** The part of @jupyterlab/translation's TranslationBundle the views use. */
export interface ITrans {
  __(msgid: string, ...args: unknown[]): string;
  _n(msgid: string, msgidPlural: string, n: number, ...args: unknown[]): string;
}

function fill(text: string, args: unknown[]): string {
  return text.replace(/%(\d+)/g, (_, i: string) => String(args[Number(i) - 1]));
}

/** English, untranslated. */
export const plain: ITrans = {
  __: (msgid, ...args) => fill(msgid, args),
  _n: (msgid, msgidPlural, n, ...args) => fill(n === 1 ? msgid : msgidPlural, [n, ...args]),
};
