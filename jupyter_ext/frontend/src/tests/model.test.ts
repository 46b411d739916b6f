/**
 * ChatModel on a recorded session (src/tests/fixtures/session-events.json, written by a real nini
 * run against the scripted model: a chart, a failed step, an R policy refusal, a task with a step
 * inside, a streamed Markdown answer, the skill enhancement after it, then a cancelled turn).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

import type { NiniEvent } from '../api';
import {
  ApprovalItem,
  ChatModel,
  EARLIER_ID,
  EarlierItem,
  StepItem,
  summaryBody
} from '../model';

const EVENTS: NiniEvent[] = JSON.parse(
  readFileSync(
    join(__dirname, '../../src/tests/fixtures/session-events.json'),
    'utf-8'
  )
);

function steps(model: ChatModel): StepItem[] {
  return model.items.filter((item): item is StepItem => item.kind === 'step');
}

test('the recorded session folds into items in order', () => {
  const model = new ChatModel();
  model.apply(EVENTS);
  const kinds = model.items.map(item =>
    item.kind === 'step' ? `step:${item.name}` : item.kind
  );
  assert.deepEqual(kinds, [
    'user',
    'step:run_code',
    'step:run_code',
    'step:run_r_code',
    'step:task:explore',
    'step:list_datasets',
    'assistant',
    'end',
    'step:skill-creator',
    'step:skill-enhance',
    'step:task:skill:enhance',
    'step:save_skill',
    'note',
    'user',
    'step:run_code',
    'end'
  ]);
  assert.equal(model.lastSeq, EVENTS[EVENTS.length - 1].seq);
  assert.equal(model.running, false);
});

test('a code step carries its code, language, output, charts and status', () => {
  const model = new ChatModel();
  model.apply(EVENTS);
  const [chart, failed, refused] = steps(model);
  assert.equal(chart.language, 'python');
  assert.equal(chart.label, 'make numbers');
  assert.match(chart.code ?? '', /plt\.plot/);
  assert.equal(chart.status, 'succeeded');
  assert.ok((chart.durationMs ?? 0) > 0);
  assert.match(chart.stdout, /x\n0\s+1/);
  assert.deepEqual(chart.artifacts, [
    'artifacts/make-numbers.png',
    'artifacts/make-numbers.svg'
  ]);
  assert.deepEqual(chart.datasetsSaved, ['nums']);
  assert.equal(failed.status, 'failed');
  assert.equal(failed.error?.code, 'CODE_ERROR');
  assert.match(failed.error?.message ?? '', /ZeroDivisionError/);
  assert.equal(refused.language, 'r');
  assert.equal(refused.error?.code, 'POLICY_VIOLATION');
  assert.equal(refused.error?.violations?.[0].name, 'system');
  assert.equal(refused.error?.violations?.[0].line, 1);
});

test('a task shows its one sentence and holds the steps it ran', () => {
  const model = new ChatModel();
  model.apply(EVENTS);
  const task = steps(model).find(step => step.name === 'task:explore')!;
  const inner = steps(model).find(step => step.name === 'list_datasets')!;
  assert.equal(task.summary, 'The nums dataset exists.');
  assert.equal(inner.parentId, task.id);
  assert.equal(task.parentId, null);
});

test('the answer is streamed then final, and the note after it is apart from it', () => {
  const model = new ChatModel();
  const answerStart = EVENTS.findIndex(
    event => event.type === 'assistant_delta'
  );
  model.apply(EVENTS.slice(0, answerStart + 2));
  const streaming = model.items[model.items.length - 1];
  assert.equal(streaming.kind, 'assistant');
  assert.equal(streaming.kind === 'assistant' && streaming.streaming, true);
  assert.equal(model.running, true);
  model.apply(EVENTS);
  const answer = model.items.find(item => item.kind === 'assistant');
  assert.equal(
    answer?.kind === 'assistant' && answer.text,
    'The sum is **6**.\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n```python\nprint(1)\n```'
  );
  assert.equal(answer?.kind === 'assistant' && answer.streaming, false);
  const note = model.items.find(item => item.kind === 'note');
  assert.equal(
    note?.kind === 'note' && note.text,
    '[Skill] Created: numbers-chart'
  );
  // the enhancement's own steps are background work, not part of the answer
  assert.ok(
    steps(model)
      .filter(step => step.background)
      .map(step => step.name)
      .includes('save_skill')
  );
  assert.ok(
    steps(model)
      .filter(step => !step.background)
      .every(step => step.turnId !== null)
  );
});

test('a cancelled turn ends canceled with its step stopped (grey), not failed', () => {
  const model = new ChatModel();
  model.apply(EVENTS);
  const last = model.items[model.items.length - 1];
  assert.equal(last.kind === 'end' && last.endedBy, 'canceled');
  const slow = steps(model).find(step => step.label === 'slow')!;
  assert.equal(slow.error?.code, 'CANCELED');
  assert.equal(slow.status, 'stopped');
  assert.ok(
    steps(model)
      .filter(step => step !== slow)
      .every(step => step.status !== 'stopped')
  );
});

test('events replayed twice (a reconnect) change nothing; apply returns only what changed', () => {
  const model = new ChatModel();
  const all = model.apply(EVENTS);
  assert.equal(all.length, model.items.length);
  const count = model.items.length;
  assert.deepEqual(model.apply(EVENTS), []);
  assert.equal(model.items.length, count);
});

test('events split anywhere give the same items', () => {
  const whole = new ChatModel();
  whole.apply(EVENTS);
  for (const cut of [1, 7, 20, 26, 37]) {
    const parts = new ChatModel();
    parts.apply(EVENTS.slice(0, cut));
    parts.apply(EVENTS.slice(cut));
    assert.deepEqual(
      JSON.stringify(parts.items),
      JSON.stringify(whole.items),
      `cut at ${cut}`
    );
  }
});

// -- approvals: a step in the user's kernel waits for a person (events as nini.execution.approvals sends them)

let approvalSeq = 1000;
function approvalEvent(
  type: string,
  data: any,
  turn: string | null = 'tk',
  call: string | null = null
): NiniEvent {
  approvalSeq += 1;
  return { seq: approvalSeq, type, turn_id: turn, tool_call_id: call, data };
}

/** A turn whose step asks, then the answer `how` and the step's result as the server sends them. */
function askedStep(id: string, how: string): NiniEvent[] {
  const refused = how === 'reject' || how === 'timed_out';
  return [
    approvalEvent(
      'tool_call',
      { name: 'run_code', arguments: { code: `${id} = 1` } },
      'tk',
      `c-${id}`
    ),
    approvalEvent(
      'approval_required',
      {
        approval_id: id,
        code: `${id} = 1`,
        language: 'python',
        notice: 'runs in your kernel, not sandboxed'
      },
      null
    ),
    approvalEvent(
      'approval_resolved',
      { approval_id: id, approved: !refused, how },
      null
    ),
    ...(how === 'session'
      ? [approvalEvent('approval_scope', { allowed_for_session: true }, null)]
      : []),
    approvalEvent(
      'tool_result',
      refused
        ? {
            name: 'run_code',
            success: false,
            error: { code: 'CANCELED', message: 'the step was not approved' }
          }
        : { name: 'run_code', success: true, error: null },
      'tk',
      `c-${id}`
    )
  ];
}

function approval(model: ChatModel, id: string): ApprovalItem {
  const item = model.get(`approval:${id}`);
  assert.equal(item?.kind, 'approval');
  return item as ApprovalItem;
}

test('an approval waits with its code, then shows how it was answered: once, for the session, rejected, timed out', () => {
  const model = new ChatModel();
  model.apply([approvalEvent('user_message', { text: 'q' })]);
  for (const how of ['once', 'session', 'reject', 'timed_out']) {
    const [call, required, resolved, ...rest] = askedStep(`a-${how}`, how);
    model.apply([call, required]);
    const waiting = approval(model, `a-${how}`);
    assert.equal(waiting.state, 'waiting');
    assert.equal(waiting.code, `a-${how} = 1`);
    assert.equal(waiting.stepId, `c-a-${how}`); // its card goes inside the card of the step that asks
    assert.deepEqual(
      model.apply([resolved, ...rest]).sort(),
      [`approval:a-${how}`, `c-a-${how}`].sort()
    );
    assert.equal(approval(model, `a-${how}`).state, how);
  }
  const status = Object.fromEntries(
    steps(model).map(step => [step.id, step.status])
  );
  // a refused step did not run because a person said no: failed (CANCELED), not "stopped"
  assert.deepEqual(status, {
    'c-a-once': 'succeeded',
    'c-a-session': 'succeeded',
    'c-a-reject': 'failed',
    'c-a-timed_out': 'failed'
  });
});

test('an answer from another client (another page, REST) updates the card: only the approval id counts', () => {
  const model = new ChatModel();
  model.apply([approvalEvent('user_message', { text: 'q' })]);
  const [call, required] = askedStep('a1', 'once');
  model.apply([call, required]);
  assert.deepEqual(
    model.apply([
      approvalEvent(
        'approval_resolved',
        { approval_id: 'other', approved: true, how: 'once' },
        null
      )
    ]),
    []
  );
  assert.equal(approval(model, 'a1').state, 'waiting');
  model.apply([
    approvalEvent(
      'approval_resolved',
      { approval_id: 'a1', approved: true },
      null
    )
  ]); // an older server: no `how`
  assert.equal(approval(model, 'a1').state, 'once');
});

test('Stop while a step waits for approval: the card says it did not run, the step is stopped', () => {
  const model = new ChatModel();
  model.apply([approvalEvent('user_message', { text: 'q' })]);
  const [call, required] = askedStep('a2', 'once');
  model.apply([call, required]);
  const changed = model.apply([
    approvalEvent(
      'tool_result',
      {
        name: 'run_code',
        success: false,
        error: { code: 'CANCELED', message: 'the call was cancelled' }
      },
      'tk',
      'c-a2'
    ),
    approvalEvent('done', { ended_by: 'canceled', completed_normally: false })
  ]);
  assert.ok(changed.includes('approval:a2'));
  assert.equal(approval(model, 'a2').state, 'stopped');
  assert.equal(steps(model)[0].status, 'stopped');
});

test('a run that ends canceled stops the steps it left running; a finished run touches nothing', () => {
  const model = new ChatModel();
  model.apply([
    approvalEvent('user_message', { text: 'q' }),
    approvalEvent(
      'tool_call',
      { name: 'task:explore', arguments: {} },
      'tk',
      'task'
    ),
    approvalEvent(
      'tool_call',
      { name: 'run_code', arguments: { code: 'x' } },
      'tk',
      'inner'
    )
  ]);
  model.apply([
    approvalEvent('done', { ended_by: 'canceled', completed_normally: false })
  ]);
  assert.deepEqual(
    steps(model).map(step => step.status),
    ['stopped', 'stopped']
  );
  const finished = new ChatModel();
  finished.apply(
    EVENTS.slice(0, EVENTS.findIndex(event => event.type === 'done') + 1)
  );
  assert.ok(steps(finished).every(step => step.status !== 'stopped'));
});

// -- a long session (issue 38): the summary of its older turns, one note atop the conversation

function summaryEvent(seq: number, turns: number, lines: string): NiniEvent {
  return {
    seq,
    type: 'context_summary',
    turn_id: `t${seq}`,
    tool_call_id: null,
    data: {
      text: `Earlier in this session (${turns} turns summarized)\n${lines}`,
      summarized_turns: turns
    }
  };
}

test('a context summary is one item, first, without its title line; a later one replaces it', () => {
  const model = new ChatModel();
  model.apply(EVENTS.slice(0, 26)); // the first turn, to its done
  const first = model.apply([
    summaryEvent(100, 3, '- turn 1: asked: <img src=x onerror=alert(1)>')
  ]);
  assert.deepEqual(first, [EARLIER_ID]);
  assert.equal(model.items[0].kind, 'earlier');
  const note = model.get(EARLIER_ID) as EarlierItem;
  assert.equal(note.text, '- turn 1: asked: <img src=x onerror=alert(1)>'); // text, as given
  assert.equal(note.summarizedTurns, 3);
  const count = model.items.length;
  assert.deepEqual(
    model.apply([summaryEvent(101, 5, 'narrative\n- turn 4: asked: more')]),
    [EARLIER_ID]
  );
  assert.equal(model.items.length, count);
  assert.equal(model.items.filter(item => item.kind === 'earlier').length, 1);
  assert.deepEqual(
    [note.text, note.summarizedTurns, note.turnId],
    ['narrative\n- turn 4: asked: more', 5, 't101']
  );
});

test('replayed from 0, the latest summary is the one shown; a title alone leaves an empty body', () => {
  const events = [
    summaryEvent(1, 2, 'old'),
    ...EVENTS.slice(0, 26).map(event => ({ ...event, seq: event.seq + 1 })),
    summaryEvent(40, 7, 'new')
  ];
  const replayed = new ChatModel();
  replayed.apply(events);
  const note = replayed.get(EARLIER_ID) as EarlierItem;
  assert.deepEqual([note.text, note.summarizedTurns], ['new', 7]);
  assert.equal(replayed.items[0], note);
  assert.equal(summaryBody('Earlier in this session (1 turns summarized)'), '');
  assert.equal(
    summaryBody('本会话早前内容（已概括 2 轮）\n- 第 1 轮：提问：x'),
    '- 第 1 轮：提问：x'
  );
});
