/**
 * Proposals as data: the diff against a replaced cell as coloured lines, and ChatModel folding a
 * `propose_cell` result and its decision.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';

import type { NiniEvent } from '../api';
import { diffLines } from '../diff';
import { ChatModel, ProposalItem } from '../model';

const DIFF =
  '--- cell 2\n+++ proposed\n@@ -1,3 +1,3 @@\n import pandas as pd\n-df = pd.read_csv("a.csv")\n+df = pd.read_csv("a.csv", parse_dates=["day"])\n df.head()\n\\ No newline at end of file\n';

test('a unified diff becomes tagged lines without its file headers', () => {
  assert.deepEqual(diffLines(DIFF), [
    { kind: 'hunk', text: '@@ -1,3 +1,3 @@' },
    { kind: 'context', text: 'import pandas as pd' },
    { kind: 'del', text: 'df = pd.read_csv("a.csv")' },
    { kind: 'add', text: 'df = pd.read_csv("a.csv", parse_dates=["day"])' },
    { kind: 'context', text: 'df.head()' }
  ]);
  assert.deepEqual(diffLines(null), []);
  assert.deepEqual(diffLines(''), []);
});

test('a removed line starting with "--" inside a hunk stays a removed line', () => {
  assert.deepEqual(diffLines('@@ -1 +1 @@\n--- a comment\n+++ another'), [
    { kind: 'hunk', text: '@@ -1 +1 @@' },
    { kind: 'del', text: '-- a comment' },
    { kind: 'add', text: '++ another' }
  ]);
});

function event(
  seq: number,
  type: string,
  data: any,
  toolCallId: string | null = null
): NiniEvent {
  return { seq, type, turn_id: 't1', tool_call_id: toolCallId, data };
}

const RESULT = {
  cell_type: 'code',
  language: 'python',
  source: 'df.plot()',
  position: 3,
  replaces: null,
  diff: null,
  status: 'pending',
  ran: null
};

test('a propose_cell result becomes a pending proposal after its step; its decision updates it', () => {
  const model = new ChatModel();
  const touched = model.apply([
    event(1, 'user_message', { text: 'plot it' }),
    event(
      2,
      'tool_call',
      {
        name: 'propose_cell',
        arguments: { source: 'df.plot()', language: 'python', position: 3 }
      },
      'c1'
    ),
    event(
      3,
      'tool_result',
      { name: 'propose_cell', success: true, result: RESULT },
      'c1'
    )
  ]);
  assert.ok(touched.includes('proposal:c1'));
  assert.deepEqual(
    model.items.map(item => item.kind),
    ['user', 'step', 'proposal']
  );
  const item = model.get('proposal:c1') as ProposalItem;
  assert.equal(item.proposal.proposal_id, 'c1');
  assert.equal(item.proposal.status, 'pending');
  assert.equal(item.proposal.position, 3);
  assert.deepEqual(
    model.apply([
      event(4, 'proposal_decided', { decision: 'accepted', ran: true }, 'c1')
    ]),
    ['proposal:c1']
  );
  assert.equal(item.proposal.status, 'accepted');
  assert.equal(item.proposal.ran, true);
});

test('a failed propose_cell, or one without a result, makes no proposal; the server record adds it', () => {
  const model = new ChatModel();
  model.apply([
    event(
      1,
      'tool_result',
      {
        name: 'propose_cell',
        success: false,
        error: { code: 'INVALID_ARGUMENT' }
      },
      'c1'
    ),
    event(2, 'tool_result', { name: 'propose_cell', success: true }, 'c2')
  ]);
  assert.equal(model.proposals.length, 0);
  const id = model.setProposal({
    ...RESULT,
    proposal_id: 'c2',
    status: 'rejected',
    ran: null
  } as any);
  assert.equal(id, 'proposal:c2');
  assert.equal(model.proposals[0].proposal.status, 'rejected');
  assert.equal(model.setProposal({ ...model.proposals[0].proposal }), null); // nothing changed: nothing to redraw
});
