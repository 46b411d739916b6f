/**
 * A step's results, readable: its outputs in their order as a notebook shows them, and its error.
 *
 * Displays (a DataFrame's HTML table, Markdown, text) go through JupyterLab's rendermime with the
 * sidebar's strict sanitizer (./sanitize), untrusted, as any model-made content; printed text is
 * plain text. Text and tables keep their rows whole and scroll sideways in a box the user can make
 * taller (CSS `resize`), instead of wrapping a DataFrame's rows mid-row. output_df's first rows are
 * a table too. An error reads its line first (code, message, line), its traceback folded below.
 */
import { IRenderMimeRegistry, MimeModel } from '@jupyterlab/rendermime';

import { el } from './dom';
import { __ } from './i18n';
import type { StepItem, StepOutput, TablePreview } from './model';
import { strictRendermime } from './sanitize';

const SHOWN = new WeakMap<HTMLElement, unknown[]>(); // what an element shows now: redrawn only when it changes

/** Whether `host` is to show other parts than it does (and note that it now shows `parts`). */
function changed(host: HTMLElement, parts: unknown[]): boolean {
  const shown = SHOWN.get(host);
  SHOWN.set(host, parts);
  return (
    shown === undefined ||
    shown.length !== parts.length ||
    shown.some((part, i) => part !== parts[i])
  );
}

/** Fill `host` (the step's output box) with the step's outputs; hidden when there are none. */
export function renderOutputs(
  step: StepItem,
  host: HTMLElement,
  rendermime: IRenderMimeRegistry
): void {
  if (!changed(host, [step.outputs, step.table, step.stdout, step.stderr])) {
    return;
  }
  const nodes: HTMLElement[] = [];
  if (step.outputs.length) {
    for (const output of step.outputs) {
      const node = outputNode(output, rendermime);
      if (node !== null) {
        nodes.push(node);
      }
    }
  } else {
    // an R step, or an older server's event: the run's text as it was printed
    for (const [name, text] of [
      ['stdout', step.stdout],
      ['stderr', step.stderr]
    ]) {
      if (text) {
        nodes.push(streamNode(name, text));
      }
    }
  }
  if (step.table !== null) {
    nodes.push(tableNode(step.table));
  }
  host.replaceChildren(...nodes);
  host.hidden = nodes.length === 0;
  scrollable(host, __('Output'));
}

/** A box that scrolls is reached by Tab, so the keyboard scrolls it too (and a screen reader names it). */
function scrollable(node: HTMLElement, label: string): void {
  node.tabIndex = 0;
  node.setAttribute('role', 'group');
  node.setAttribute('aria-label', label);
}

function streamNode(name: string, text: string): HTMLElement {
  const pre = el('pre', 'nini-output-stream', text);
  pre.dataset.name = name;
  return pre;
}

/** One output's element; null for an error (the step's error block shows it) or an empty display. */
function outputNode(
  output: StepOutput,
  rendermime: IRenderMimeRegistry
): HTMLElement | null {
  if (output.output_type === 'stream') {
    return output.text
      ? streamNode(output.name === 'stderr' ? 'stderr' : 'stdout', output.text)
      : null;
  }
  if (output.output_type === 'error' || !output.data) {
    return null;
  }
  const data = output.data;
  const strict = strictRendermime(rendermime);
  const mime = strict.preferredMimeType(data, 'ensure');
  if (mime === undefined) {
    return null;
  }
  // its text until it is on screen: a reopened session draws hundreds of steps at once, and a
  // rendermime renderer (sanitizing, typesetting) costs milliseconds each
  const node = el('div', 'nini-output-display');
  node.append(el('pre', 'nini-output-stream', data['text/plain'] ?? ''));
  whenShown(node, () => {
    const renderer = strict.createRenderer(mime);
    node.dataset.mime = mime;
    node.replaceChildren(renderer.node);
    void renderer.renderModel(new MimeModel({ data, trusted: false }));
  });
  return node;
}

const WAITING = new WeakMap<Element, () => void>();
let observer: IntersectionObserver | null = null;

/** Run `render` once `node` comes near the screen (at once where the browser cannot tell). */
function whenShown(node: HTMLElement, render: () => void): void {
  if (typeof IntersectionObserver === 'undefined') {
    render();
    return;
  }
  observer ??= new IntersectionObserver(
    entries => {
      for (const entry of entries.filter(e => e.isIntersecting)) {
        observer!.unobserve(entry.target);
        WAITING.get(entry.target)?.();
        WAITING.delete(entry.target);
      }
    },
    { rootMargin: '600px 0px' }
  );
  WAITING.set(node, render);
  observer.observe(node);
}

/** output_df's first rows as a table, under a line saying how large the whole frame is. */
function tableNode(table: TablePreview): HTMLElement {
  const box = el('figure', 'nini-output-table');
  const [rows, columns] = table.shape ?? [
    table.rows.length,
    table.columns.length
  ];
  box.append(
    el(
      'figcaption',
      undefined,
      __('output_df · %1 rows × %2 columns', rows, columns)
    )
  );
  const body = el('div', 'jp-RenderedHTMLCommon nini-output-table-body'); // JupyterLab's table style
  const grid = el('table');
  const head = grid.createTHead().insertRow();
  for (const [i, column] of table.columns.entries()) {
    const th = el('th', undefined, column);
    th.title = table.dtypes?.[i] ?? '';
    head.append(th);
  }
  const tbody = grid.createTBody();
  for (const row of table.rows) {
    const tr = tbody.insertRow();
    for (const value of row) {
      tr.insertCell().textContent =
        value === null
          ? 'NA'
          : typeof value === 'object'
            ? JSON.stringify(value)
            : String(value);
    }
  }
  body.append(grid);
  box.append(body);
  if (rows > table.rows.length) {
    box.append(
      el(
        'div',
        'nini-output-table-more',
        __('First %1 of %2 rows', table.rows.length, rows)
      )
    );
  }
  return box;
}

/** The step's error in `host`: the line first (code, message, line), the traceback folded under it,
 * a policy refusal's violations one per line. */
export function renderError(step: StepItem, host: HTMLElement): void {
  host.hidden = step.error === null;
  if (step.error === null || !changed(host, [step.error, step.outputs])) {
    return; // drawn already (an opened traceback stays open)
  }
  const { code, message, line, violations } = step.error;
  if (violations?.length) {
    host.replaceChildren(
      el('div', 'nini-error-title', code),
      ...violations.map(v => el('div', 'nini-violation', v.message))
    );
    return;
  }
  const where = line === undefined ? '' : ` ${__('(line %1)', line)}`;
  const nodes: HTMLElement[] = [
    el('div', 'nini-error-line', `${code}: ${message}${where}`)
  ];
  const traceback =
    step.outputs.find(output => output.output_type === 'error')?.traceback ??
    [];
  if (traceback.length) {
    const fold = el('details', 'nini-traceback');
    const text = el('pre', 'nini-traceback-text', traceback.join('\n'));
    scrollable(text, __('Traceback'));
    fold.append(el('summary', undefined, __('Traceback')), text);
    nodes.push(fold);
  }
  host.replaceChildren(...nodes);
}
