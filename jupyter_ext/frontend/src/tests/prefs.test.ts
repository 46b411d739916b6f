/**
 * Preference learning as data: the line a recorded feedback shows, and values as the user types
 * and reads them.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { describeLearned, parseValue, showValue, SIGNALS } from '../prefs';

test('a recorded feedback reads as its action and each change', () => {
  const learned = {
    feedback_id: 3,
    changes: [
      {
        id: 1,
        key: 'punctuation.no_exclamation',
        before: 0.5,
        after: 0.7,
        why: 'signal no_exclamation'
      }
    ],
    canceled: ['concise']
  };
  assert.equal(
    describeLearned('reject', learned),
    'Recorded: reject · punctuation.no_exclamation 0.50 → 0.70 · concise cancelled out'
  );
  assert.equal(
    describeLearned('accept', { feedback_id: 4, changes: [], canceled: [] }),
    'Recorded: accept'
  );
});

test('a typed value is JSON when it parses, text otherwise, and shows back the same', () => {
  assert.equal(parseValue('true'), true);
  assert.equal(parseValue('2'), 2);
  assert.equal(parseValue('formal'), 'formal');
  assert.deepEqual(parseValue('{"a": 1}'), { a: 1 });
  assert.equal(showValue('formal'), 'formal');
  assert.equal(showValue(true), 'true');
  assert.equal(showValue(parseValue('[1,2]')), '[1,2]');
});

test('the signals offered are the ones the server knows, each once', () => {
  const names = SIGNALS.map(([name]) => name);
  assert.equal(new Set(names).size, names.length);
  assert.ok(
    names.includes('no_exclamation') && names.includes('fewer_decimals')
  );
});
