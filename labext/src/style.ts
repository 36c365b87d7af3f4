// The view's look, scoped under .pagelab-live; inserted once per document.

const CSS = `
.pagelab-live { font: 12px/1.4 var(--jp-code-font-family, monospace); color: var(--jp-ui-font-color1, #222); }
.pagelab-live .pl-head { display: flex; gap: 8px; align-items: center; margin-bottom: 4px; }
.pagelab-live .pl-title { font-weight: bold; }
.pagelab-live .pl-state, .pagelab-live .pl-version { color: var(--jp-ui-font-color2, #666); }
.pagelab-live table { border-collapse: collapse; }
.pagelab-live th, .pagelab-live td { padding: 1px 8px; text-align: left; white-space: nowrap; }
.pagelab-live td.pl-total, .pagelab-live td.pl-rate { text-align: right; font-variant-numeric: tabular-nums; }
.pagelab-live td.pl-source { color: #1565c0; }
.pagelab-live .pl-unavailable td.pl-total { color: var(--jp-ui-font-color3, #999); }
.pagelab-live td.pl-reason { color: #b26a00; white-space: normal; max-width: 40em; }
.pagelab-kernels { overflow: auto; background: var(--jp-layout-color1, #fff); }
.pagelab-panel { padding: 6px; font: 12px/1.4 var(--jp-ui-font-family, sans-serif); }
.pagelab-panel .pl-panel-status { color: var(--jp-ui-font-color2, #666); margin-bottom: 6px; }
.pagelab-panel .pagelab-live { margin-bottom: 10px; }
.pagelab-panel .pagelab-live td.pl-note { display: none; }
.pagelab-live td.pl-note { color: var(--jp-ui-font-color2, #666); white-space: normal; max-width: 40em; }
`;

export function addStyle(doc: Document): void {
  if (doc.getElementById("pagelab-live-style")) return;
  const style = doc.createElement("style");
  style.id = "pagelab-live-style";
  style.textContent = CSS;
  doc.head.append(style);
}
