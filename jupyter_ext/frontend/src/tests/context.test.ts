/**
 * The `notebook` object of an ask: outputs as bounded text, which cells are sent, the byte budget.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
  bounded,
  fileName,
  matchMentions,
  MentionCandidate,
  mentionAt,
  NbCell,
  notebookContext,
  outputsText
} from '../context';

const code = (source: string, outputs: NbCell['outputs'] = []): NbCell => ({
  cell_type: 'code',
  source,
  outputs
});

test('outputs become text: streams, text/plain results, errors as ename: evalue; no images or tracebacks', () => {
  const text = outputsText([
    { output_type: 'stream', name: 'stdout', text: ['rows: 3\n', 'cols: 2\n'] },
    {
      output_type: 'execute_result',
      data: { 'text/plain': '   a  b\n0  1  2', 'text/html': '<table/>' }
    },
    { output_type: 'display_data', data: { 'image/png': 'iVBORw0KGgo=' } },
    {
      output_type: 'error',
      ename: 'KeyError',
      evalue: "'price'",
      traceback: ['\u001b[0;31mlong trace']
    } as any
  ]);
  assert.equal(text, "rows: 3\ncols: 2\n   a  b\n0  1  2\nKeyError: 'price'");
  assert.ok(
    !text.includes('iVBOR') &&
      !text.includes('<table') &&
      !text.includes('long trace')
  );
});

test('outputs text is bounded and says how much was cut; ANSI colours are removed', () => {
  const long = outputsText(
    [{ output_type: 'stream', text: '\u001b[31mx\u001b[0m'.repeat(5_000) }],
    200
  );
  assert.ok(long.length <= 200, String(long.length));
  assert.ok(
    long.startsWith('xxxx') && /… \(\d+ more characters\)$/.test(long),
    long.slice(-40)
  );
  assert.equal(bounded('short', 10), 'short');
});

test('the active cell and the cells above it are sent; cells below keep their index but are empty', () => {
  const cells = [code('import pandas as pd'), code('df = pd.read_csv("s.csv")', [{ output_type: 'stream', text: 'ok\n' }]),
    code('df.describe()'), code('secret_below = 1'), code('also_below = 2')]; // prettier-ignore
  const context = notebookContext({ name: 'analysis.ipynb', cells, active: 2 });
  assert.equal(context.name, 'analysis.ipynb');
  assert.equal(context.active, 2);
  assert.deepEqual(
    context.cells.map(cell => cell.source),
    ['import pandas as pd', 'df = pd.read_csv("s.csv")', 'df.describe()']
  );
  assert.equal(context.cells[1].outputs, 'ok');
  assert.ok(!JSON.stringify(context).includes('secret_below'));
});

test('an attached cell below the active one is sent at its own index; the ones between are empty', () => {
  const cells = [code('a = 1'), code('b = 2'), code('c = 3'), code('d = 4')];
  const context = notebookContext({
    name: 'n.ipynb',
    cells,
    active: 0,
    attachedCells: [3, 3, 9],
    attachedFiles: { 'data/notes.txt': 'hello' }
  });
  assert.deepEqual(
    context.cells.map(cell => cell.source),
    ['a = 1', '', '', 'd = 4']
  );
  assert.deepEqual(context.attached_cells, [3]);
  assert.deepEqual(context.attached_files, { 'data/notes.txt': 'hello' });
});

test('over the byte budget the cells farthest above are emptied first, the active one kept', () => {
  const big = 'x'.repeat(10_000);
  const cells = Array.from({ length: 30 }, (_, i) =>
    code(`# cell ${i}\n${big}`)
  );
  const context = notebookContext({
    name: 'big.ipynb',
    cells,
    active: 29,
    maxBytes: 50_000
  });
  const size = new TextEncoder().encode(JSON.stringify(context)).length;
  assert.ok(size <= 50_000, String(size));
  assert.equal(context.cells.length, 30);
  assert.ok(context.cells[29].source.startsWith('# cell 29'));
  assert.ok(context.cells[28].source.startsWith('# cell 28'));
  assert.equal(context.cells[0].source, '');
});

test('a notebook without cells has no active cell; a path gives only its file name', () => {
  const context = notebookContext({
    name: 'empty.ipynb',
    cells: [],
    active: 0
  });
  assert.deepEqual(context, {
    name: 'empty.ipynb',
    cells: [],
    active: null,
    attached_cells: [],
    attached_files: {}
  });
  assert.equal(fileName('projects/q3/analysis.ipynb'), 'analysis.ipynb');
});

test('@ is a mention at the start or after a space, up to the caret, with no space in it', () => {
  assert.deepEqual(mentionAt('@', 1), { start: 0, query: '' });
  assert.deepEqual(mentionAt('look at @sal', 12), { start: 8, query: 'sal' });
  assert.deepEqual(mentionAt('look at @sal and more', 12), {
    start: 8,
    query: 'sal'
  }); // the caret decides
  assert.equal(mentionAt('mail me@example.com', 19), null); // inside a word: not a mention
  assert.equal(mentionAt('@cell 3', 7), null); // a space ended it
  assert.equal(mentionAt('no at sign', 10), null);
  assert.deepEqual(mentionAt('two\n@lines', 10), { start: 4, query: 'lines' });
});

test('mentions match label or detail in any case, label starts first, at most the limit', () => {
  const candidates: MentionCandidate[] = [
    { kind: 'cell', key: '0', label: 'cell 0', detail: 'import pandas as pd' },
    {
      kind: 'cell',
      key: '1',
      label: 'cell 1',
      detail: 'sales = pd.read_csv("sales.csv")'
    },
    {
      kind: 'file',
      key: 'data/sales.csv',
      label: 'sales.csv',
      detail: 'data/sales.csv'
    },
    { kind: 'file', key: 'notes.txt', label: 'notes.txt', detail: 'notes.txt' }
  ];
  assert.deepEqual(
    matchMentions('SAL', candidates).map(c => c.key),
    ['data/sales.csv', '1']
  );
  assert.deepEqual(
    matchMentions('', candidates).map(c => c.key),
    ['0', '1', 'data/sales.csv', 'notes.txt']
  );
  assert.deepEqual(
    matchMentions('cell', candidates, 1).map(c => c.key),
    ['0']
  );
  assert.deepEqual(matchMentions('zzz', candidates), []);
});
