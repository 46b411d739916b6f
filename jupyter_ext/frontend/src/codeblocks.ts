/**
 * Copy / Insert below / Replace cell on every piece of code the chat shows: each code block of an
 * answer and each step's code. Insert below puts the code as a new cell under the active cell of
 * the current notebook; Replace cell puts it in place of the active cell (one undoable change,
 * through ./cells). Nothing runs: the user runs the cell when they choose to.
 */
import { Clipboard, Notification } from '@jupyterlab/apputils';
import type { INotebookTracker } from '@jupyterlab/notebook';
import {
  addBelowIcon,
  copyIcon,
  LabIcon,
  pasteIcon
} from '@jupyterlab/ui-components';

import { activeCell, putCell } from './cells';
import { el } from './dom';
import { __ } from './i18n';

/** A small icon button with a tooltip and an accessible name (the sidebar can be 250 px wide). */
export function iconButton(
  icon: LabIcon,
  className: string,
  label: string,
  onClick: (button: HTMLButtonElement) => void
): HTMLButtonElement {
  const button = el(
    'button',
    `jp-Button jp-mod-minimal nini-icon-button ${className}`
  );
  button.type = 'button';
  button.title = label;
  button.setAttribute('aria-label', label);
  button.append(
    icon.element({ tag: 'span', className: 'nini-icon-button-icon' })
  );
  button.onclick = () => onClick(button);
  return button;
}

/** Put `text` on the clipboard: the asynchronous Clipboard API where the page may use it, else
 * JupyterLab's copy (a selection and the copy command). */
async function copy(text: string): Promise<void> {
  try {
    await navigator.clipboard.writeText(text);
  } catch {
    Clipboard.copyToSystem(text);
  }
}

/** Say briefly on the button that its action was done (its tooltip and a `data-done` to style). */
function done(button: HTMLButtonElement, words: string): void {
  const label = button.getAttribute('aria-label') ?? '';
  button.dataset.done = 'true';
  button.title = words;
  window.setTimeout(() => {
    delete button.dataset.done;
    button.title = label;
  }, 1500);
}

/** Put `code` into the current notebook: below its active cell, or in place of it. */
function intoNotebook(
  notebooks: INotebookTracker | null | undefined,
  code: string,
  replace: boolean
): boolean {
  const target = activeCell(notebooks);
  if (target === null) {
    Notification.warning(
      __('Open a notebook first: the code goes next to its active cell'),
      { autoClose: 5000 }
    );
    return false;
  }
  const index = replace ? Math.max(target.index, 0) : target.index + 1;
  putCell(
    target.panel,
    index,
    { cell_type: 'code', source: code },
    replace && target.index >= 0
  );
  return true;
}

/** The toolbar of one piece of code: Copy, Insert below, Replace cell. */
export function codeActions(
  code: string,
  notebooks: INotebookTracker | null | undefined
): HTMLElement {
  const bar = el('div', 'nini-code-actions');
  bar.setAttribute('role', 'toolbar');
  bar.setAttribute('aria-label', __('Code actions'));
  bar.append(
    iconButton(
      copyIcon,
      'nini-code-copy',
      __('Copy'),
      button => void copy(code).then(() => done(button, __('Copied')))
    ),
    iconButton(addBelowIcon, 'nini-code-insert', __('Insert below'), button => {
      if (intoNotebook(notebooks, code, false)) {
        done(button, __('Inserted'));
      }
    }),
    iconButton(pasteIcon, 'nini-code-replace', __('Replace cell'), button => {
      if (intoNotebook(notebooks, code, true)) {
        done(button, __('Replaced'));
      }
    })
  );
  return bar;
}

/** Give each code block of rendered Markdown (an answer) its toolbar, once. */
export function addCodeActions(
  host: HTMLElement,
  notebooks: INotebookTracker | null | undefined
): void {
  host.querySelectorAll('pre').forEach(pre => {
    if (pre.parentElement?.classList.contains('nini-codeblock')) {
      return;
    }
    const block = el('div', 'nini-codeblock');
    pre.replaceWith(block);
    pre.tabIndex = 0; // it scrolls sideways: the keyboard reaches it
    block.append(codeActions(pre.textContent ?? '', notebooks), pre);
  });
}
