/**
 * The one place the sidebar writes into a notebook: a cell put at an index of a notebook's model,
 * inserted or replacing the cell there. Proposals (accepted), code blocks (Insert below, Replace
 * cell) and charts (Insert chart into notebook) all go through it, so each lands the same way: one
 * undoable change of the shared model, the new cell active, a Markdown cell shown rendered.
 */
import type { MarkdownCell } from '@jupyterlab/cells';
import type { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';

/** A cell to put into a notebook (nbformat v4's fields, attachments for a Markdown cell's images). */
export interface NewCell {
  cell_type: 'code' | 'markdown';
  source: string;
  attachments?: Record<string, Record<string, string>>;
}

/** Put `cell` at `index` of `panel`'s notebook: inserted there, or replacing the cell there (its
 * source only when it is of the same type, so its outputs and id stay). Returns the index. */
export function putCell(
  panel: NotebookPanel,
  index: number,
  cell: NewCell,
  replace: boolean
): number {
  const notebook = panel.content;
  const model = notebook.model;
  if (model === null) {
    throw new Error('the notebook is not loaded yet');
  }
  const shared = model.sharedModel;
  const fresh = {
    cell_type: cell.cell_type,
    source: cell.source,
    metadata: {},
    ...(cell.attachments ? { attachments: cell.attachments } : {})
  };
  const replaced =
    replace && index < model.cells.length ? model.cells.get(index) : null;
  if (
    replaced !== null &&
    replaced.type === cell.cell_type &&
    cell.attachments === undefined
  ) {
    replaced.sharedModel.setSource(cell.source);
  } else if (replaced !== null) {
    shared.transact(() => {
      shared.deleteCell(index);
      shared.insertCell(index, fresh);
    });
  } else {
    index = Math.max(0, Math.min(index, model.cells.length));
    shared.insertCell(index, fresh);
  }
  notebook.activeCellIndex = index;
  notebook.deselectAll();
  if (cell.cell_type === 'markdown') {
    const widget = notebook.widgets[index];
    if (widget?.model.type === 'markdown') {
      (widget as MarkdownCell).rendered = true; // shown as text, as an inserted answer should be
    }
  }
  return index;
}

/** Where "Insert below" and "Replace cell" act: the current notebook and its active cell (-1 when
 * it has none); null when no notebook is open. */
export function activeCell(
  notebooks: INotebookTracker | null | undefined
): { panel: NotebookPanel; index: number } | null {
  const panel = notebooks?.currentWidget ?? null;
  if (panel === null || panel.content.model === null) {
    return null;
  }
  return {
    panel,
    index: panel.content.widgets.length ? panel.content.activeCellIndex : -1
  };
}
