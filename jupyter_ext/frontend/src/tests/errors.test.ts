/**
 * Every error code a reply can carry has a plain sentence with an action: the codes are read from
 * nini/errors.py itself (the `ErrorCode` enum), so a code added there without a sentence here fails.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { test } from 'node:test';

import {
  ERROR_SENTENCES,
  errorParts,
  errorSentence,
  errorText,
  reasonParts
} from '../errors';
import { setLanguage } from '../i18n';
import { ZH } from '../zh';

const ERRORS_PY = resolve(
  __dirname,
  '..',
  '..',
  '..',
  '..',
  'nini',
  'errors.py'
); // from test-build/tests/

/** The members of `class ErrorCode(StrEnum)` in nini/errors.py. */
function pythonCodes(): string[] {
  const source = readFileSync(ERRORS_PY, 'utf-8');
  const body = /^class ErrorCode\(StrEnum\):\n((?:[ \t]+.*\n|\n)+)/m.exec(
    source
  );
  assert.ok(body, 'class ErrorCode(StrEnum) not found in nini/errors.py');
  return [...body[1].matchAll(/^\s+([A-Z_]+) = "([A-Z_]+)"/gm)].map(match => {
    assert.equal(
      match[1],
      match[2],
      'an ErrorCode member is named as its value'
    );
    return match[2];
  });
}

test('every code of nini.errors.ErrorCode has a sentence, with its Chinese form', () => {
  const codes = pythonCodes();
  assert.ok(
    codes.length >= 15 && codes.includes('NO_MODEL_AVAILABLE'),
    `codes read: ${codes.join(', ')}`
  );
  assert.deepEqual(
    codes.filter(code => !(code in ERROR_SENTENCES)),
    [],
    'codes without a sentence in errors.ts'
  );
  assert.deepEqual(
    Object.values(ERROR_SENTENCES).filter(sentence => !(sentence in ZH)),
    [],
    'sentences without zh.ts'
  );
  // the client's own code, and nothing that neither side makes
  assert.deepEqual(
    Object.keys(ERROR_SENTENCES).filter(code => !codes.includes(code)),
    ['NETWORK']
  );
});

test('each sentence says what to do: a clause after the colon, one sentence, no code in it', () => {
  for (const [code, sentence] of Object.entries(ERROR_SENTENCES)) {
    const [what, action] = sentence.split(': ');
    assert.ok(
      what && action && action.length > 10,
      `${code}: "${sentence}" has no action after its colon`
    );
    assert.ok(
      sentence.endsWith('.') && !sentence.includes(code),
      `${code}: "${sentence}"`
    );
  }
  assert.equal(
    new Set(Object.values(ERROR_SENTENCES)).size,
    Object.keys(ERROR_SENTENCES).length,
    'two codes share a sentence'
  );
});

test('a failure reads as its sentence, then the code and the server words', () => {
  const refused = {
    code: 'NO_MODEL_AVAILABLE',
    message: 'llm.providers is empty'
  };
  assert.equal(
    errorText(refused),
    `${ERROR_SENTENCES.NO_MODEL_AVAILABLE} (NO_MODEL_AVAILABLE: llm.providers is empty)`
  );
  assert.deepEqual(errorParts(new Error('plain')), {
    sentence: null,
    code: null,
    detail: 'plain'
  });
  assert.equal(errorText('just words'), 'just words');
  assert.equal(
    errorSentence('HTTP_502'),
    'The server answered with an unexpected error (HTTP 502): reload the page and try again.'
  );
  assert.equal(errorSentence('SOMETHING_ELSE'), null);
  assert.deepEqual(reasonParts('UPSTREAM_ERROR: 401 bad key'), {
    sentence: ERROR_SENTENCES.UPSTREAM_ERROR,
    code: 'UPSTREAM_ERROR',
    detail: '401 bad key'
  });
  assert.equal(reasonParts('no code here').code, null);
});

test('in Chinese the sentence is Chinese and the server words stay as they are', () => {
  try {
    setLanguage('zh', null);
    const text = errorText({
      code: 'TIMEOUT',
      message: 'no answer within 10 s'
    });
    assert.ok(
      text.startsWith(ZH[ERROR_SENTENCES.TIMEOUT]) &&
        text.endsWith('(TIMEOUT: no answer within 10 s)'),
      text
    );
    assert.ok(errorSentence('HTTP_500')!.includes('500'));
  } finally {
    setLanguage('en', 'en');
  }
});
