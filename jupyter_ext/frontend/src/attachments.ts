/**
 * What goes with the next question, as chips above the chat's input: the active notebook (its
 * active cell and those above it), its variables (copies the agent may ask for, in the sandbox),
 * attached cells and attached files. Each chip has a ✕ that leaves it out of the next question; an
 * attach button opens a menu (the selected cells, the files selected in the file browser: the
 * commands nini:attach-cell and nini:attach-file), and `@` in the question offers cells and files.
 * After a question is sent, attachments go and the notebook and its variables come back.
 *
 * A cell is kept as its model, not its index, so it stays the same cell when the user inserts or
 * moves cells before asking; its index is read when the question is sent.
 *
 * A file is read through Jupyter's contents API, which knows UTF-8 only; a file it cannot decode (a
 * GBK or Latin-1 CSV) is read by nini instead (`NiniApi.readText`: the encoding load_dataset would
 * detect), and its chip names that encoding.
 */
import type { ICellModel } from '@jupyterlab/cells';
import type { IDefaultFileBrowser } from '@jupyterlab/filebrowser';
import type { NotebookPanel } from '@jupyterlab/notebook';
import type { Contents } from '@jupyterlab/services';
import {
  closeIcon,
  codeIcon,
  fileIcon,
  kernelIcon,
  LabIcon,
  MenuSvg,
  notebookIcon
} from '@jupyterlab/ui-components';
import type { CommandRegistry } from '@lumino/commands';

import { NiniApi, NiniApiError, RunWhere, TextFile } from './api';
import { iconButton } from './codeblocks';
import {
  fileName,
  MentionCandidate,
  NotebookJson,
  notebookContext
} from './context';
import { el } from './dom';
import { __ } from './i18n';
import { MentionList } from './mention';

/** A paperclip: what attaching looks like wherever chat tools attach things. */
export const attachIcon = new LabIcon({
  name: 'nini:attach',
  svgstr:
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24"><path class="jp-icon3" fill="#616161" d="M16.5 6v11.5a4 4 0 0 1-8 0V5a2.5 2.5 0 0 1 5 0v10.5a1 1 0 0 1-2 0V6H10v9.5a2.5 2.5 0 0 0 5 0V5a4 4 0 0 0-8 0v12.5a5.5 5.5 0 0 0 11 0V6z"/></svg>'
});

/** A file larger than this is not read to be attached (only its first characters would be sent). */
export const ATTACH_MAX_BYTES = 2_000_000;

/** The notebook a question is asked from, and where its code would run (the chat's choice). */
export interface AskedFrom {
  panel: NotebookPanel | null;
  kernel: { kernelId: string; name: string; mode: RunWhere } | null;
}

/** What the chips need of JupyterLab beyond the notebook: commands, the files and where to say a failure. */
export interface LabHooks {
  commands: CommandRegistry;
  contents: Contents.IManager;
  files: IDefaultFileBrowser | null;
  attachCell: string; // the command ids of the attach menu
  attachFile: string;
  onError: (message: string) => void;
}

type ChipKind = 'notebook' | 'variables' | 'cell' | 'file';
const ICONS: Record<ChipKind, LabIcon> = {
  notebook: notebookIcon,
  variables: kernelIcon,
  cell: codeIcon,
  file: fileIcon
};

interface AttachedCell {
  panel: NotebookPanel;
  cell: ICellModel;
}

/** An attached file's text and, when not UTF-8, the encoding nini read it with. */
interface AttachedFile {
  text: string;
  encoding: string | null;
}

/** Whether the contents API refused to read a file as text because it is not UTF-8 (its 400 "bad format"). */
function notUtf8(error: unknown): boolean {
  return (
    (error as { response?: { status?: number } } | null)?.response?.status ===
    400
  );
}

export class Attachments {
  readonly node = el('div', 'nini-context');
  private readonly chips = el('div', 'nini-attachments');
  private cells: AttachedCell[] = [];
  private files = new Map<string, AttachedFile>(); // by the file's path under the server's root
  private withoutNotebook = false; // the user took the notebook's chip off (for the next question)
  private withoutVariables = false;
  private lab: LabHooks | null = null;
  private menu: MenuSvg | null = null;

  constructor(
    private readonly askedFrom: () => AskedFrom,
    private readonly api: Pick<NiniApi, 'readText'>
  ) {
    this.chips.setAttribute('role', 'group');
    this.chips.setAttribute('aria-label', __('Sent with the next question'));
    const attach = iconButton(
      attachIcon,
      'nini-attach',
      __('Attach cells or files (or type @)'),
      button => this.openMenu(button)
    );
    attach.setAttribute('aria-haspopup', 'menu');
    this.node.append(this.chips, attach);
    this.render();
  }

  /** Connect the attach menu and `@`'s files to JupyterLab (the plugin does, once its commands exist). */
  useLab(hooks: LabHooks): void {
    this.lab = hooks;
    this.menu = new MenuSvg({ commands: hooks.commands });
    this.menu.addClass('nini-attach-menu');
    this.menu.addItem({ command: hooks.attachCell, args: { short: true } });
    this.menu.addItem({ command: hooks.attachFile, args: { short: true } });
  }

  /** Offer cells and files when `@` is typed in `input`. */
  watch(input: HTMLTextAreaElement): void {
    const list = new MentionList(
      input,
      () => this.mentionCandidates(),
      candidate => void this.attachMention(candidate)
    );
    this.node.append(list.node);
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

  addFile(
    path: string,
    text: string,
    read: Pick<TextFile, 'encoding'> | null = null
  ): void {
    const encoding =
      read && !/^utf-?8$/i.test(read.encoding) ? read.encoding : null;
    this.files.set(path, { text, encoding });
    this.render();
  }

  /** Read and attach files of the server (the file browser's selection, an `@` choice): a folder is
   * skipped, one over ATTACH_MAX_BYTES or not text in any encoding is refused, saying why. */
  async addPaths(items: Iterable<Contents.IModel>): Promise<void> {
    for (const item of Array.from(items)) {
      if (item.type === 'directory' || this.lab === null) {
        continue;
      }
      if ((item.size ?? 0) > ATTACH_MAX_BYTES) {
        this.lab.onError(
          __(
            '%1 is too large to attach (over 2 MB); ask nini to load it as a dataset instead',
            item.name
          )
        );
        continue;
      }
      try {
        await this.readFile(this.lab, item);
      } catch (error) {
        // nini's refusals (binary, a link, a hidden file) name the file, in the sidebar's language
        const refused =
          error instanceof NiniApiError &&
          error.status >= 400 &&
          error.status < 500;
        const why = String((error as Error)?.message ?? error);
        this.lab.onError(
          refused
            ? error.message
            : __('%1 cannot be attached as text (%2)', item.name, why)
        );
      }
    }
  }

  /** Attach `item`'s text: as the contents API reads it (UTF-8), else as nini reads it (any encoding;
   * a binary file is refused there, in words that name the file only). */
  private async readFile(lab: LabHooks, item: Contents.IModel): Promise<void> {
    let model: Contents.IModel;
    try {
      model = await lab.contents.get(item.path, {
        type: 'file',
        format: 'text',
        content: true
      });
    } catch (error) {
      if (!notUtf8(error)) {
        throw error;
      }
      const read = await this.api.readText(item.path);
      this.addFile(item.path, read.text, read);
      return;
    }
    this.addFile(item.path, String(model.content ?? ''));
  }

  /** After a question: its attachments went with it; the notebook and its variables come back. */
  clear(): void {
    this.cells = [];
    this.files.clear();
    this.withoutNotebook = this.withoutVariables = false;
    this.render();
  }

  /** Draw the chips again (the active notebook, its kernel or where code runs changed). */
  refresh(): void {
    this.render();
  }

  /** Where the question's code runs, as the chat chose it, unless the variables' chip was taken off
   * (then the sandbox gets no copies: no notebook kernel is named). */
  kernelFor<T extends { mode: RunWhere }>(kernel: T | null): T | null {
    return kernel?.mode === 'sandbox' && this.withoutVariables ? null : kernel;
  }

  /** The `notebook` of the ask: the active notebook's cells up to the active one (unless its chip was
   * taken off), the attached cells and files. */
  notebookJson(): NotebookJson | null {
    const panel = this.askedFrom().panel;
    const files = Object.fromEntries(
      [...this.files].map(([path, file]) => [path, file.text])
    );
    if (panel === null || panel.content.model === null) {
      return Object.keys(files).length
        ? {
            name: null,
            cells: [],
            active: null,
            attached_cells: [],
            attached_files: files
          }
        : null;
    }
    const notebook = panel.content;
    const attached = this.cellIndices(panel);
    if (
      this.withoutNotebook &&
      !attached.length &&
      !Object.keys(files).length
    ) {
      return null;
    }
    const active =
      !this.withoutNotebook && notebook.widgets.length
        ? notebook.activeCellIndex
        : -1;
    const last = Math.max(active, ...attached);
    return notebookContext({
      name: fileName(panel.context.path),
      cells: notebook.widgets
        .slice(0, last + 1)
        .map(cell => cell.model.toJSON()),
      active: active >= 0 ? active : null,
      attachedCells: attached,
      attachedFiles: files
    });
  }

  /** The indices, now, of the cells attached from `panel` (cells deleted since are dropped). */
  private cellIndices(panel: NotebookPanel): number[] {
    const models = panel.content.widgets.map(widget => widget.model);
    return this.cells
      .filter(attached => attached.panel === panel)
      .map(attached => models.indexOf(attached.cell))
      .filter(index => index >= 0);
  }

  private openMenu(button: HTMLElement): void {
    if (this.menu === null) {
      return;
    }
    const box = button.getBoundingClientRect();
    this.menu.open(box.left, box.bottom);
  }

  /** What `@` offers: the active notebook's cells, then the files of the file browser's folder. */
  private async mentionCandidates(): Promise<MentionCandidate[]> {
    const panel = this.askedFrom().panel;
    const cells: MentionCandidate[] = (panel?.content.widgets ?? []).map(
      (cell, index) => ({
        kind: 'cell',
        key: String(index),
        label: __('cell %1', index),
        detail: firstLine(cell.model.sharedModel.getSource())
      })
    );
    const lab = this.lab;
    if (lab === null || lab.files === null) {
      return cells;
    }
    const folder = await lab.contents.get(lab.files.model.path, {
      content: true
    });
    const files = (folder.content as Contents.IModel[]).filter(
      item => item.type !== 'directory'
    );
    return cells.concat(
      files.map(item => ({
        kind: 'file',
        key: item.path,
        label: item.name,
        detail: item.path === item.name ? '' : item.path
      }))
    );
  }

  private async attachMention(candidate: MentionCandidate): Promise<void> {
    const panel = this.askedFrom().panel;
    if (candidate.kind === 'cell') {
      const cell = panel?.content.widgets[Number(candidate.key)];
      if (panel && cell) {
        this.addCells(panel, [cell.model]);
      }
    } else if (this.lab !== null) {
      await this.addPaths([
        await this.lab.contents.get(candidate.key, { content: false })
      ]);
    }
  }

  private render(): void {
    const chips: HTMLElement[] = [];
    const { panel, kernel } = this.askedFrom();
    if (panel !== null && !this.withoutNotebook) {
      const name = fileName(panel.context.path);
      chips.push(
        this.chip(
          'notebook',
          name,
          __(
            '%1: the active cell and the cells above it go with the question',
            name
          ),
          () => {
            this.withoutNotebook = true;
          }
        )
      );
    }
    if (kernel?.mode === 'sandbox' && !this.withoutVariables) {
      chips.push(this.chip('variables', __('variables of %1', kernel.name),
        __("The agent may ask for copies of %1's variables, made in nini's sandbox", kernel.name), () => {
          this.withoutVariables = true;
        })); // prettier-ignore
    }
    this.cells = this.cells.filter(attached => !attached.panel.isDisposed);
    for (const attached of this.cells) {
      const index = attached.panel.content.widgets.findIndex(
        widget => widget.model === attached.cell
      );
      if (index >= 0) {
        const label = __(
          '%1 · cell %2',
          fileName(attached.panel.context.path),
          index
        );
        chips.push(
          this.chip(
            'cell',
            label,
            firstLine(attached.cell.sharedModel.getSource()),
            () => {
              this.cells = this.cells.filter(other => other !== attached);
            }
          )
        );
      }
    }
    for (const [path, file] of this.files) {
      const label = file.encoding
        ? `${fileName(path)} (${file.encoding})`
        : fileName(path);
      const tooltip = file.encoding
        ? __(
            '%1 · encoding %2, detected as nini loads it (not UTF-8)',
            path,
            file.encoding
          )
        : path;
      chips.push(
        this.chip('file', label, tooltip, () => this.files.delete(path))
      );
    }
    this.chips.replaceChildren(...chips);
    this.node.dataset.count = String(chips.length);
  }

  private chip(
    kind: ChipKind,
    label: string,
    tooltip: string,
    remove: () => void
  ): HTMLElement {
    const chip = el('span', 'nini-chip');
    chip.dataset.kind = kind;
    chip.title = tooltip;
    const close = el('button', 'nini-chip-remove');
    close.type = 'button';
    close.append(
      closeIcon.element({ tag: 'span', className: 'nini-chip-remove-icon' })
    );
    close.setAttribute('aria-label', __('Remove %1', label));
    close.title = __('Leave %1 out of the next question', label);
    close.onclick = () => {
      const place = [...this.chips.children].indexOf(chip);
      remove();
      this.render();
      // the focus goes to the next chip's ✕ (or the attach button), not to the page
      const buttons = [
        ...this.node.querySelectorAll<HTMLButtonElement>(
          '.nini-chip-remove, .nini-attach'
        )
      ];
      buttons[Math.min(place, buttons.length - 1)]?.focus();
    };
    chip.append(
      ICONS[kind].element({ tag: 'span', className: 'nini-chip-icon' }),
      el('span', 'nini-chip-label', label),
      close
    );
    return chip;
  }
}

function firstLine(source: string): string {
  const line = source.split('\n', 1)[0];
  return line.length > 80 ? `${line.slice(0, 79)}…` : line;
}
