/**
 * A step's results as data: where its code runs is known from its tool_call, its outputs and
 * output_df's first rows come with code_execution, its error keeps the line it names.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';

import type { NiniEvent } from '../api';
import { ChatModel, StepItem } from '../model';

function event(
  seq: number,
  type: string,
  data: any,
  toolCallId: string | null = null
): NiniEvent {
  return { seq, type, turn_id: 't1', tool_call_id: toolCallId, data };
}

const OUTPUTS = [
  { output_type: 'stream', name: 'stdout', text: 'before\n' },
  {
    output_type: 'execute_result',
    data: {
      'text/html': '<table><tr><td>1</td></tr></table>',
      'text/plain': '   a\n0  1'
    }
  },
  {
    output_type: 'error',
    ename: 'ZeroDivisionError',
    evalue: 'division by zero',
    traceback: ['Cell In[2], line 2', 'ZeroDivisionError']
  }
];
const TABLE = {
  columns: ['a'],
  dtypes: ['int64'],
  rows: [[1]],
  shape: [12, 1]
};

test("a code step's badge is known from its tool_call, its outputs and table from code_execution", () => {
  const model = new ChatModel();
  model.apply([
    event(1, 'user_message', { text: 'go' }),
    event(
      2,
      'tool_call',
      { name: 'run_code', arguments: { code: '1 / 0' }, isolation: 'sandbox' },
      'c1'
    )
  ]);
  const step = model.get('c1') as StepItem;
  assert.equal(step.isolation, 'sandbox'); // while it runs
  assert.deepEqual(step.outputs, []);
  model.apply([
    event(
      3,
      'code_execution',
      {
        language: 'python',
        stdout: 'before\n',
        outputs: [...OUTPUTS, null, 'noise'],
        table: TABLE
      },
      'c1'
    ),
    event(
      4,
      'tool_result',
      {
        name: 'run_code',
        success: false,
        error: {
          code: 'CODE_ERROR',
          message: 'ZeroDivisionError: division by zero',
          line: 2
        }
      },
      'c1'
    )
  ]);
  assert.equal(step.isolation, 'sandbox'); // an event without it keeps what the tool_call said
  assert.deepEqual(step.outputs, OUTPUTS); // what is not an output object is left out
  assert.deepEqual(step.table, TABLE);
  assert.deepEqual(step.error, {
    code: 'CODE_ERROR',
    message: 'ZeroDivisionError: division by zero',
    line: 2,
    violations: undefined
  });
});

test("an older server's events (no outputs, no table, no isolation on the call) keep the text view", () => {
  const model = new ChatModel();
  model.apply([
    event(
      1,
      'tool_call',
      { name: 'run_r_code', arguments: { code: 'summary(1:4)' } },
      'c1'
    ),
    event(
      2,
      'code_execution',
      {
        language: 'r',
        stdout: '   Min. \n   1.00 ',
        isolation: 'sandbox',
        table: { columns: 'x' }
      },
      'c1'
    )
  ]);
  const step = model.get('c1') as StepItem;
  assert.deepEqual(
    [step.outputs, step.table, step.isolation, step.stdout],
    [[], null, 'sandbox', '   Min. \n   1.00 ']
  );
});
