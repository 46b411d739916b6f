/**
 * The status line's reducer (../status): what the chat waits for, given what the user did and the
 * session's events, each at a time of a test's choosing, and the words it shows later.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

import type { NiniEvent } from '../api';
import { setLanguage } from '../i18n';
import { IDLE, nextStatus, Status, StatusInput, statusText } from '../status';

const RECORDED: NiniEvent[] = JSON.parse(
  readFileSync(
    join(__dirname, '../../src/tests/fixtures/session-events.json'),
    'utf-8'
  )
);

let seq = 0;
function ev(
  type: string,
  data: any = {},
  turn: string | null = 't1'
): StatusInput {
  seq += 1;
  return {
    kind: 'event',
    event: { seq, type, turn_id: turn, tool_call_id: null, data }
  };
}

/** The status after each (input, at ms) in turn, from idle. */
function run(steps: [StatusInput, number][], from: Status = IDLE): Status {
  return steps.reduce(
    (status, [input, at]) => nextStatus(status, input, at),
    from
  );
}

/** Asked at 0, recorded at 10, its first step started at `at`. */
function stepStartedAt(at: number): Status {
  return run([
    [{ kind: 'ask' }, 0],
    [ev('user_message'), 10],
    [ev('tool_call', { name: 'run_code', arguments: {} }), at]
  ]);
}

test('Enter starts the wait at once, before the server has said anything', () => {
  const asked = run([[{ kind: 'ask' }, 1000]]);
  assert.equal(asked.phase, 'thinking');
  assert.equal(statusText(asked, 1000), 'Thinking · 0 s');
  assert.equal(statusText(asked, 5200), 'Thinking · 4 s');
  assert.equal(statusText(IDLE, 5200), '');
});

test("the turn's first event keeps counting from Enter; a step has its number and tenths of seconds", () => {
  const status = run([
    [{ kind: 'ask' }, 0],
    [ev('user_message', { text: 'q' }), 300],
    [ev('assistant_message', { text: '', tool_calls: ['run_code'] }), 2000],
    [
      ev('tool_call', {
        name: 'run_code',
        arguments: { code: 'x', label: 'load' }
      }),
      2000
    ]
  ]);
  assert.equal(status.turn, 't1');
  assert.equal(statusText(status, 4100), 'Running step 1 · 2.1 s');
  assert.equal(status.label, 'load');
  const second = run(
    [
      [ev('tool_result', { name: 'run_code', success: true }), 4500],
      [ev('tool_call', { name: 'run_code', arguments: {} }), 9000],
      [ev('tool_result', { name: 'run_code', success: true }), 9100],
      [ev('tool_call', { name: 'run_r_code', arguments: {} }), 9500]
    ],
    status
  );
  assert.equal(statusText(second, 9500), 'Running step 3 · 0.0 s');
  const before = run(
    [[ev('tool_result', { name: 'run_code', success: true }), 4500]],
    status
  );
  assert.equal(statusText(before, 8500), 'Thinking · 4 s'); // the model thinks again: a new count
});

test("a kernel starting says so, then the step's own seconds come back", () => {
  const running = stepStartedAt(100);
  const starting = run(
    [[ev('kernel_start', { state: 'starting', sandbox: 'bwrap' }, null), 150]],
    running
  );
  assert.equal(statusText(starting, 2150), 'Starting sandbox… · 2 s');
  const unsandboxed = run(
    [[ev('kernel_start', { state: 'starting', sandbox: 'none' }, null), 150]],
    running
  );
  assert.equal(statusText(unsandboxed, 150), 'Starting the kernel… · 0 s');
  const ready = run(
    [
      [
        ev(
          'kernel_start',
          { state: 'ready', sandbox: 'bwrap', duration_ms: 3800 },
          null
        ),
        3950
      ]
    ],
    starting
  );
  assert.equal(statusText(ready, 4100), 'Running step 1 · 4.0 s');
});

test('a kernel starting in place of one the server shut down (idle, or over the cap) says so', () => {
  const running = stepStartedAt(100);
  const culled = run(
    [
      [
        ev(
          'kernel_start',
          { state: 'starting', sandbox: 'bwrap', culled: 'idle' },
          null
        ),
        150
      ]
    ],
    running
  );
  assert.equal(
    statusText(culled, 1150),
    'The idle kernel was shut down; starting a new one… · 1 s'
  );
  const ready = run(
    [
      [
        ev(
          'kernel_start',
          { state: 'ready', sandbox: 'bwrap', duration_ms: 900 },
          null
        ),
        1050
      ]
    ],
    culled
  );
  assert.equal(statusText(ready, 1100), 'Running step 1 · 1.0 s');
});

test('a sandbox started while the model thinks (variables prefetched) is said, then the thinking', () => {
  const starting = run([
    [{ kind: 'ask' }, 0],
    [ev('user_message'), 10],
    [ev('kernel_start', { state: 'starting', sandbox: 'bwrap' }, null), 20]
  ]);
  assert.match(statusText(starting, 1000), /^Starting sandbox…/);
  const ready = run(
    [[ev('kernel_start', { state: 'ready', sandbox: 'bwrap' }, null), 3000]],
    starting
  );
  assert.equal(statusText(ready, 3000), 'Thinking · 3 s');
});

test('a step waiting for approval says so; an answer from anywhere gives the step back its seconds', () => {
  const running = stepStartedAt(1000);
  const asking = run(
    [
      [
        ev('approval_required', { approval_id: 'a1', code: 'x = 1' }, null),
        1100
      ]
    ],
    running
  );
  assert.equal(asking.phase, 'approval');
  assert.equal(statusText(asking, 6100), 'Waiting for your OK · 5 s');
  const answered = run(
    [
      [
        ev(
          'approval_resolved',
          { approval_id: 'a1', how: 'once', approved: true },
          null
        ),
        7000
      ]
    ],
    asking
  );
  assert.equal(statusText(answered, 7000), 'Running step 1 · 6.0 s');
});

test("the run's end clears the line; what stop hooks do after the answer is not waited for", () => {
  const done = run([
    [{ kind: 'ask' }, 0],
    [ev('user_message'), 10],
    [ev('assistant_delta', { text: 'Hel' }), 500],
    [ev('assistant_message', { text: 'Hello' }), 700],
    [ev('done', { ended_by: 'finished', completed_normally: true }), 710]
  ]);
  assert.equal(done.phase, 'idle');
  assert.equal(statusText(done, 9000), '');
  const after = run(
    [
      [ev('tool_call', { name: 'skill-enhance', arguments: {} }), 800],
      [ev('tool_result', { name: 'skill-enhance', success: true }), 900],
      [ev('stop_hook_note', { text: 'note' }), 950]
    ],
    done
  );
  assert.equal(after.phase, 'idle');
});

test('the answer being written has its own words', () => {
  const writing = run([
    [{ kind: 'ask' }, 0],
    [ev('user_message'), 10],
    [ev('assistant_delta', { text: 'Hel' }), 2000],
    [ev('assistant_delta', { text: 'lo' }), 3000]
  ]);
  assert.equal(statusText(writing, 4000), 'Writing the answer · 2 s');
});

test('Stop says "Stopping…" until the run has ended, whatever comes before its end', () => {
  const running = stepStartedAt(100);
  const stopping = run(
    [
      [{ kind: 'stop' }, 2000],
      [
        ev('tool_result', {
          name: 'run_code',
          success: false,
          error: { code: 'CANCELED' }
        }),
        2500
      ]
    ],
    running
  );
  assert.equal(statusText(stopping, 3000), 'Stopping… · 1 s');
  const ended = run([[ev('done', { ended_by: 'canceled' }), 2600]], stopping);
  assert.equal(ended.phase, 'idle');
  assert.equal(statusText(ended, 2600), '');
  // a Stop after the end (its done drawn first) changes nothing; one the server had no run for clears
  assert.equal(run([[{ kind: 'stop' }, 3000]], ended).phase, 'idle');
  assert.equal(run([[{ kind: 'stop_missed' }, 2100]], stopping).phase, 'idle');
});

test('a refused question clears the line; a new question starts a new count', () => {
  const refused = run([
    [{ kind: 'ask' }, 0],
    [{ kind: 'ask_failed' }, 40]
  ]);
  assert.equal(refused.phase, 'idle');
  const again = run([[{ kind: 'ask' }, 5000]], refused);
  assert.equal(statusText(again, 5000), 'Thinking · 0 s');
});

test("while idle, an approval or a kernel of another client's call is not this chat's wait", () => {
  const idle = run([
    [ev('approval_required', { approval_id: 'a9' }, null), 10],
    [ev('kernel_start', { state: 'starting', sandbox: 'bwrap' }, null), 20]
  ]);
  assert.equal(idle.phase, 'idle');
  assert.equal(idle.kernel, null);
});

test("another client's question in the open session is shown as it runs", () => {
  const watched = run([
    [ev('user_message', { text: 'from another page' }, 't9'), 100],
    [ev('tool_call', { name: 'run_code', arguments: {} }, 't9'), 300]
  ]);
  assert.equal(statusText(watched, 1300), 'Running step 1 · 1.0 s');
});

test('a whole recorded session (a chart, failures, a task, a cancelled turn) ends idle', () => {
  const status = RECORDED.reduce(
    (s, event) => nextStatus(s, { kind: 'event', event }, 0),
    IDLE
  );
  assert.equal(status.phase, 'idle');
  assert.equal(statusText(status, 0), '');
  assert.equal(status.ended.length, 2); // both turns ended; their late events are not waited for
});

test('the words follow the chosen language', () => {
  try {
    setLanguage('zh', 'en');
    const status = run([
      [{ kind: 'ask' }, 0],
      [ev('user_message'), 10],
      [ev('tool_call', { name: 'run_code', arguments: {} }), 1000],
      [ev('kernel_start', { state: 'starting', sandbox: 'bwrap' }, null), 1000]
    ]);
    assert.equal(statusText(status, 3000), '正在启动沙箱… · 2 秒');
    assert.equal(
      statusText(run([[{ kind: 'ask' }, 0]]), 4000),
      '思考中 · 4 秒'
    );
  } finally {
    setLanguage('en', 'en');
  }
});
