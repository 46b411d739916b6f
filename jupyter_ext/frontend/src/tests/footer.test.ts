/**
 * The run footer and message times: what a `done` event's counts read as, and that a turn recorded
 * before nini counted them shows no footer.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
  footerParts,
  formatCost,
  formatDuration,
  formatTokens,
  timeTexts,
  tookOf
} from '../footer';
import { setLanguage } from '../i18n';

const DONE = {
  answer: 'ok',
  completed_normally: true,
  ended_by: 'finished',
  iterations: 2,
  notes: [],
  duration_ms: 4230,
  steps: 3,
  usage: {
    prompt_tokens: 12_345,
    completion_tokens: 67,
    calls: 2,
    unreported: 0
  },
  cost: null
};

test('a done event gives duration, steps and tokens; no cost where none is configured', () => {
  const took = tookOf(DONE)!;
  assert.deepEqual(
    footerParts(took).map(part => [part.kind, part.text]),
    [
      ['duration', '4.2 s'],
      ['steps', '3 steps'],
      ['tokens', '12k + 67 tokens']
    ]
  );
  assert.match(
    footerParts(took)[2].title,
    /12,345 prompt tokens and 67 completion tokens over 2 model calls/
  );
  assert.equal(
    tookOf({ ...DONE, steps: 1 }) &&
      footerParts(tookOf({ ...DONE, steps: 1 })!)[1].text,
    '1 step'
  );
});

test('a configured price shows the cost; an older record shows no footer', () => {
  const parts = footerParts(tookOf({ ...DONE, cost: { USD: 0.000123 } })!);
  assert.deepEqual(parts[3], {
    kind: 'cost',
    text: '$0.00012',
    title: "The cost at the provider's configured price"
  });
  assert.equal(
    tookOf({
      answer: 'old',
      completed_normally: true,
      ended_by: 'finished',
      iterations: 1
    }),
    null
  );
  assert.match(
    footerParts(
      tookOf({ ...DONE, usage: { ...DONE.usage, unreported: 1 } })!
    )[2].title,
    /1 calls reported no usage/
  );
});

test('formats fit a narrow footer', () => {
  assert.deepEqual([850, 4230, 12_400, 65_000].map(formatDuration), [
    '850 ms',
    '4.2 s',
    '12 s',
    '1 min 05 s'
  ]);
  assert.deepEqual([950, 1234, 56_789, 2_345_678].map(formatTokens), [
    '950',
    '1.2k',
    '57k',
    '2.3M'
  ]);
  assert.equal(formatCost({ CNY: 1.2345 }), '¥1.23');
  assert.equal(formatCost({ USD: 0 }), '$0');
  assert.equal(formatCost({ CHF: 0.5, USD: 0.01 }), '0.5 CHF + $0.01');
});

test('a message time is short today, with the day otherwise, and whole in its tooltip; Chinese too', () => {
  const now = new Date(2026, 10, 26, 15, 0);
  assert.equal(
    timeTexts(new Date(2026, 10, 26, 9, 5).toISOString(), now)!.short,
    '09:05'
  );
  assert.equal(
    timeTexts(new Date(2026, 0, 3, 14, 30).toISOString(), now)!.short,
    '01-03 14:30'
  );
  assert.equal(
    timeTexts(new Date(2025, 11, 31, 23, 59).toISOString(), now)!.short,
    '2025-12-31 23:59'
  );
  assert.match(
    timeTexts(new Date(2026, 10, 26, 9, 5).toISOString(), now)!.full,
    /2026/
  );
  assert.equal(timeTexts('not a time', now), null);
  assert.equal(timeTexts(undefined, now), null);
  try {
    setLanguage('zh', 'en');
    assert.equal(footerParts(tookOf(DONE)!)[1].text, '3 步');
    assert.match(
      timeTexts(new Date(2026, 10, 26, 9, 5).toISOString(), now)!.full,
      /2026年/
    );
  } finally {
    setLanguage('en', 'en');
  }
});

// -- how full the context was (issue 38): the `done` event's `context`, absent in older records
const CONTEXT = {
  tokens: 48_213,
  window: 128_000,
  percent: 37.7,
  budget: 64_000,
  turns: 9,
  summarized_turns: 1204
};

test('a context report shows after the tokens, its exact numbers in the tooltip', () => {
  const parts = footerParts(tookOf({ ...DONE, context: CONTEXT })!);
  assert.deepEqual(
    parts.map(part => part.kind),
    ['duration', 'steps', 'tokens', 'context']
  );
  assert.equal(parts[3].text, 'context 48k (37.7%)');
  assert.equal(
    parts[3].title,
    '48,213 tokens of a context window of 128,000; 9 turns sent whole, 1,204 earlier turns summarized'
  );
  const priced = footerParts(
    tookOf({ ...DONE, context: CONTEXT, cost: { USD: 0.5 } })!
  );
  assert.deepEqual(
    priced.map(part => part.kind),
    ['duration', 'steps', 'tokens', 'context', 'cost']
  );
});

test('no context part for a record without one (older, or a null report)', () => {
  for (const context of [undefined, null, 'full', { percent: 3 }]) {
    const took = tookOf({ ...DONE, context })!;
    assert.equal(took.context, null, JSON.stringify(context));
    assert.ok(!footerParts(took).some(part => part.kind === 'context'));
  }
});

test('the context part in Chinese', () => {
  try {
    setLanguage('zh', 'en');
    const part = footerParts(tookOf({ ...DONE, context: CONTEXT })!)[3];
    assert.equal(part.text, '上下文 48k（37.7%）');
    assert.equal(
      part.title,
      '上下文窗口 128,000 个 token 中用了 48,213 个；9 轮完整发送，1,204 轮更早的内容已概括'
    );
  } finally {
    setLanguage('en', 'en');
  }
});
