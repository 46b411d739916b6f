/**
 * What the user attached to the next question: notebook cells and files, shown as removable chips
 * above the chat's input and sent with the ask (then cleared: they belong to one question).
 *
 * A cell is kept as its model, not its index, so it stays the same cell when the user inserts or
 * moves cells before asking; its index is read when the question is sent.
 */
import type { ICellModel } from '@jupyterlab/cells';
import type { NotebookPanel } from '@jupyterlab/notebook';

import { fileName } from './context';
import { el } from './dom';

interface AttachedCell {
  panel: NotebookPanel;
  cell: ICellModel;
}

export class Attachments {
  readonly node = el('div', 'nini-attachments');
  private cells: AttachedCell[] = [];
  private files = new Map<string, string>(); // the file's path under the server's root -> its text

  constructor() {
    this.node.setAttribute('aria-label', 'Attached to the next question');
    this.render();
  }

  get count(): number {
    return this.cells.length + this.files.size;
  }

  addCells(panel: NotebookPanel, cells: ICellModel[]): void {
    for (const cell of cells) {
      if (!this.cells.some(attached => attached.cell === cell)) {
        this.cells.push({ panel, cell });
      }
    }
    this.render();
  }

  addFile(path: string, text: string): void {
    this.files.set(path, text);
    this.render();
  }

  clear(): void {
    this.cells = [];
    this.files.clear();
    this.render();
  }

  /** The indices, now, of the cells attached from `panel` (cells deleted since are dropped). */
  cellIndices(panel: NotebookPanel): number[] {
    const models = panel.content.widgets.map(widget => widget.model);
    return this.cells
      .filter(attached => attached.panel === panel)
      .map(attached => models.indexOf(attached.cell))
      .filter(index => index >= 0);
  }

  fileTexts(): Record<string, string> {
    return Object.fromEntries(this.files);
  }

  private render(): void {
    const chips: HTMLElement[] = [];
    this.cells = this.cells.filter(attached => !attached.panel.isDisposed);
    for (const attached of this.cells) {
      const index = attached.panel.content.widgets.findIndex(widget => widget.model === attached.cell);
      if (index < 0) {
        continue;
      }
      const label = `${fileName(attached.panel.context.path)} · cell ${index}`;
      chips.push(this.chip('cell', label, firstLine(attached.cell.sharedModel.getSource()), () => {
        this.cells = this.cells.filter(other => other !== attached);
      }));
    }
    for (const path of this.files.keys()) {
      chips.push(this.chip('file', fileName(path), path, () => this.files.delete(path)));
    }
    this.node.replaceChildren(...chips);
    this.node.hidden = chips.length === 0;
  }

  private chip(kind: 'cell' | 'file', label: string, tooltip: string, remove: () => void): HTMLElement {
    const chip = el('span', 'nini-chip');
    chip.dataset.kind = kind;
    chip.title = tooltip;
    const close = el('button', 'nini-chip-remove', '×');
    close.setAttribute('aria-label', `Remove ${label}`);
    close.onclick = () => {
      remove();
      this.render();
    };
    chip.append(el('span', 'nini-chip-label', label), close);
    return chip;
  }
}

function firstLine(source: string): string {
  const line = source.split('\n', 1)[0];
  return line.length > 80 ? `${line.slice(0, 79)}…` : line;
}
