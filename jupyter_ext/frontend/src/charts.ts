/**
 * A step's charts: each shown in the card, opened large in a dialog on click (or Enter), and put
 * into the notebook with "Insert chart into notebook".
 *
 * The notebook gets a Markdown cell with the image as the cell's attachment (`attachment:` link):
 * the picture is saved inside the .ipynb, so it survives saving, closing and sharing the notebook,
 * where a code cell reading the file would need nini's session workspace on the user's disk.
 */
import { Dialog, Notification, showDialog } from '@jupyterlab/apputils';
import type { INotebookTracker } from '@jupyterlab/notebook';
import { ServerConnection } from '@jupyterlab/services';
import { imageIcon } from '@jupyterlab/ui-components';
import { Widget } from '@lumino/widgets';

import { activeCell, putCell } from './cells';
import { iconButton } from './codeblocks';
import { el } from './dom';
import { __ } from './i18n';

/** The chart at `url` in a dialog, as large as the window allows. */
async function openLarge(url: string, name: string): Promise<void> {
  const image = el('img', 'nini-chart-large');
  image.src = url;
  image.alt = __('chart %1', name);
  const body = new Widget({ node: el('div', 'nini-chart-dialog') });
  body.node.append(image);
  await showDialog({
    title: name,
    body,
    buttons: [Dialog.okButton({ label: __('Close') })],
    hasClose: true
  });
}

/** The bytes of the chart at `url`, base64 (what a notebook attachment holds). */
async function base64Of(url: string): Promise<string> {
  const response = await ServerConnection.makeRequest(
    url,
    {},
    ServerConnection.makeSettings()
  );
  if (!response.ok) {
    throw new Error(
      __('the chart could not be read (HTTP %1)', response.status)
    );
  }
  const bytes = new Uint8Array(await response.arrayBuffer());
  let binary = '';
  for (let i = 0; i < bytes.length; i += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(binary);
}

/** A Markdown cell with the chart attached, under the active cell of the current notebook. */
async function insertChart(
  notebooks: INotebookTracker | null | undefined,
  url: string,
  name: string
): Promise<boolean> {
  const target = activeCell(notebooks);
  if (target === null) {
    Notification.warning(
      __('Open a notebook first: the chart goes below its active cell'),
      { autoClose: 5000 }
    );
    return false;
  }
  const mime = name.endsWith('.svg')
    ? 'image/svg+xml'
    : name.endsWith('.png')
      ? 'image/png'
      : 'image/jpeg';
  const data = await base64Of(url);
  const key = name.replace(/[^\w.-]/g, '_'); // an attachment's name is a link target: nothing to escape
  const source = `![${key}](attachment:${key})`;
  putCell(
    target.panel,
    target.index + 1,
    { cell_type: 'markdown', source, attachments: { [key]: { [mime]: data } } },
    false
  );
  return true;
}

/** One chart of a step: the image (click or Enter opens it large, from `largeUrl` when there is a
 * sharper copy, the SVG) and its Insert button. */
export function chartFigure(
  url: string,
  path: string,
  notebooks: INotebookTracker | null | undefined,
  largeUrl = url
): HTMLElement {
  const name = path.split('/').pop() ?? path;
  const figure = el('figure', 'nini-chart-figure');
  const image = el('img', 'nini-chart');
  image.src = url;
  image.alt = __('chart %1', name);
  image.loading = 'lazy';
  image.tabIndex = 0;
  image.setAttribute('role', 'button');
  image.title = __('Open the chart large');
  image.onclick = () => void openLarge(largeUrl, name);
  image.onkeydown = event => {
    if (event.key === 'Enter' || event.key === ' ') {
      event.preventDefault();
      void openLarge(largeUrl, name);
    }
  };
  const insert = iconButton(
    imageIcon,
    'nini-chart-insert',
    __('Insert chart into notebook'),
    button => {
      insertChart(notebooks, url, name).then(
        inserted => {
          if (inserted) {
            button.dataset.done = 'true';
          }
        },
        error =>
          Notification.error(String((error as Error)?.message ?? error), {
            autoClose: 5000
          })
      );
    }
  );
  insert.append(
    el('span', 'nini-icon-button-text', __('Insert chart into notebook'))
  );
  figure.append(image, insert);
  return figure;
}
