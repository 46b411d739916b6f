/**
 * What the sidebar tells the agent about the user's notebook: the `notebook` object of an ask
 * request (`{name, cells: [{cell_type, source, outputs}], active, attached_cells, attached_files}`).
 *
 * Pure (no DOM, no JupyterLab): it works on nbformat-shaped cells, so the bounding rules are
 * tested without a browser. The server bounds what reaches the prompt by tokens; these bounds only
 * keep the request small (a notebook with megabytes of output must not cost megabytes per ask).
 */

/** The bound of one cell's outputs text; the server's token budget cuts further. */
export const OUTPUTS_LIMIT = 2_000;
/** The bound of one cell's source. */
export const SOURCE_LIMIT = 20_000;
/** The bound of one attached file's text. */
export const FILE_LIMIT = 20_000;
/** The whole `notebook` object, as JSON, stays under this many bytes. */
export const BODY_LIMIT = 200_000;

/** A cell as nbformat (and `ICellModel.toJSON()`) has it: multiline text as a string or lines. */
export interface NbCell {
  cell_type: string;
  source: string | string[];
  outputs?: NbOutput[];
}

export interface NbOutput {
  output_type: string;
  name?: string;
  text?: string | string[];
  data?: Record<string, unknown>;
  ename?: string;
  evalue?: string;
}

export interface NotebookCellJson {
  cell_type: 'code' | 'markdown' | 'raw';
  source: string;
  outputs: string;
}

export interface NotebookJson {
  name: string | null;
  cells: NotebookCellJson[];
  active: number | null;
  attached_cells: number[];
  attached_files: Record<string, string>;
}

// eslint-disable-next-line no-control-regex
const ANSI = /\u001b\[[0-9;]*[A-Za-z]/g;

function joined(text: unknown): string {
  return Array.isArray(text)
    ? text.join('')
    : typeof text === 'string'
      ? text
      : '';
}

/** `text` cut to `limit` characters, saying how much was left out (the model should know). */
export function bounded(text: string, limit: number): string {
  if (text.length <= limit) {
    return text;
  }
  const note = `\n… (${text.length - limit} more characters)`;
  return text.slice(0, Math.max(0, limit - note.length)) + note;
}

/** The readable text of a cell's outputs: stream text, `text/plain` results, `ename: evalue` of
 * errors (not tracebacks: long and rarely useful to the model). Images and HTML are left out. */
export function outputsText(
  outputs: NbOutput[] | undefined,
  limit: number = OUTPUTS_LIMIT
): string {
  const parts: string[] = [];
  for (const output of outputs ?? []) {
    if (output.output_type === 'stream') {
      parts.push(joined(output.text));
    } else if (
      output.output_type === 'execute_result' ||
      output.output_type === 'display_data'
    ) {
      const plain = joined(output.data?.['text/plain']);
      if (plain) {
        parts.push(plain.endsWith('\n') ? plain : `${plain}\n`);
      }
    } else if (output.output_type === 'error') {
      parts.push(`${output.ename ?? 'Error'}: ${output.evalue ?? ''}\n`);
    }
  }
  return bounded(parts.join('').replace(ANSI, '').replace(/\n+$/, ''), limit);
}

function cellType(type: string): NotebookCellJson['cell_type'] {
  return type === 'markdown' || type === 'raw' ? type : 'code';
}

export interface ContextInput {
  name: string | null;
  cells: NbCell[];
  active: number | null;
  attachedCells?: number[];
  attachedFiles?: Record<string, string>;
  maxBytes?: number;
}

/**
 * The `notebook` object for an ask: the active cell, the cells above it and the attached ones,
 * in full (bounded); cells below the active one that are not attached keep their place (indices are
 * positions in the notebook, and proposals refer to them) but are sent empty. Over `maxBytes`, the
 * cells farthest above the active one are emptied first; the active and attached cells last.
 */
export function notebookContext(input: ContextInput): NotebookJson {
  const count = input.cells.length;
  const active =
    input.active !== null && input.active >= 0 && input.active < count
      ? input.active
      : null;
  const attached = [...new Set(input.attachedCells ?? [])]
    .filter(i => i >= 0 && i < count)
    .sort((a, b) => a - b);
  const last = Math.max(
    active ?? -1,
    attached.length ? attached[attached.length - 1] : -1
  );
  const wanted = (i: number) =>
    (active !== null && i <= active) || attached.includes(i);
  const cells: NotebookCellJson[] = input.cells
    .slice(0, last + 1)
    .map((cell, i) => ({
      cell_type: cellType(cell.cell_type),
      source: wanted(i) ? bounded(joined(cell.source), SOURCE_LIMIT) : '',
      outputs: wanted(i) ? outputsText(cell.outputs) : ''
    }));
  const files: Record<string, string> = {};
  for (const [name, text] of Object.entries(input.attachedFiles ?? {})) {
    files[name] = bounded(text, FILE_LIMIT);
  }
  const result: NotebookJson = {
    name: input.name,
    cells,
    active,
    attached_cells: attached,
    attached_files: files
  };
  const limit = input.maxBytes ?? BODY_LIMIT;
  const keep = new Set<number>([
    ...(active === null ? [] : [active]),
    ...attached
  ]);
  // the order in which cells are emptied when too big: from the top down, kept ones last
  const order = [...cells.keys()]
    .filter(i => !keep.has(i))
    .concat([...keep].sort((a, b) => a - b));
  let size = byteSize(result);
  for (const i of order) {
    if (size <= limit) {
      break;
    }
    const before = byteSize(cells[i]);
    cells[i] = { ...cells[i], source: '', outputs: '' };
    size -= before - byteSize(cells[i]);
  }
  for (const name of Object.keys(files)) {
    if (size <= limit) {
      break;
    }
    size -= byteSize(files[name]);
    delete files[name];
  }
  return result;
}

function byteSize(value: unknown): number {
  return new TextEncoder().encode(JSON.stringify(value)).length;
}

/** The file name of a path (the server must never see where the notebook lives on the host). */
export function fileName(path: string): string {
  const parts = path.split(/[\\/]/);
  return parts[parts.length - 1];
}

/** An `@` being typed in the question: where it starts and what follows it up to the caret; null
 * when the caret is not in one (an `@` must start the text or follow a space: `a@b.com` is not one). */
export function mentionAt(
  text: string,
  caret: number
): { start: number; query: string } | null {
  const before = text.slice(0, caret);
  const at = before.lastIndexOf('@');
  if (at < 0 || (at > 0 && !/\s/.test(before[at - 1]))) {
    return null;
  }
  const query = before.slice(at + 1);
  return /\s/.test(query) ? null : { start: at, query };
}

/** A thing `@` can attach: a cell of the active notebook, or a file of the file browser's folder. */
export interface MentionCandidate {
  kind: 'cell' | 'file';
  key: string; // the cell's index, or the file's path
  label: string;
  detail: string;
}

/** The candidates whose label or detail holds `query` (any case), those whose label starts with it
 * first, at most `limit`. */
export function matchMentions(
  query: string,
  candidates: MentionCandidate[],
  limit = 8
): MentionCandidate[] {
  const wanted = query.toLowerCase();
  const scored = candidates
    .map((candidate, order) => {
      const label = candidate.label.toLowerCase();
      const rank = label.startsWith(wanted)
        ? 0
        : label.includes(wanted)
          ? 1
          : candidate.detail.toLowerCase().includes(wanted)
            ? 2
            : -1;
      return { candidate, rank, order };
    })
    .filter(entry => entry.rank >= 0);
  scored.sort((a, b) => a.rank - b.rank || a.order - b.order);
  return scored.slice(0, limit).map(entry => entry.candidate);
}
