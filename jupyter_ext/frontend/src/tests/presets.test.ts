/**
 * The Models form's checks before anything is sent, and its presets: each fills a kind nini has, a
 * documented base URL that passes the checks, and a key variable only where the provider wants a key.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
  isVariableName,
  KINDS,
  PRESETS,
  urlProblem,
  validateProvider
} from '../presets';

test('every preset passes the checks, with one of nini’s kinds and a documented address', () => {
  const kinds = KINDS.map(([kind]) => kind);
  assert.deepEqual(
    PRESETS.map(preset => preset.id),
    [
      'openai',
      'anthropic',
      'deepseek',
      'dashscope',
      'ollama',
      'vllm',
      'lmstudio'
    ]
  );
  for (const preset of PRESETS) {
    assert.ok(kinds.includes(preset.kind), preset.id);
    const provider = { name: preset.id, kind: preset.kind, base_url: preset.base_url, model: preset.model || preset.modelHint,
                       ...(preset.api_key_env ? { api_key_env: preset.api_key_env } : {}) }; // prettier-ignore
    assert.deepEqual(validateProvider(provider, true), {}, preset.id);
  }
  const byId = Object.fromEntries(PRESETS.map(preset => [preset.id, preset]));
  assert.equal(byId.ollama.base_url, 'http://localhost:11434/v1');
  assert.equal(byId.lmstudio.base_url, 'http://localhost:1234/v1');
  assert.equal(byId.vllm.base_url, 'http://localhost:8000/v1');
  assert.equal(byId.deepseek.base_url, 'https://api.deepseek.com');
  assert.equal(
    byId.dashscope.base_url,
    'https://dashscope.aliyuncs.com/compatible-mode/v1'
  );
  assert.equal(byId.anthropic.kind, 'anthropic');
  assert.deepEqual(
    PRESETS.filter(preset => preset.api_key_env === null).map(
      preset => preset.id
    ),
    ['ollama', 'vllm', 'lmstudio']
  );
});

test('the empty form is refused field by field before it is saved', () => {
  const problems = validateProvider({ name: '', kind: 'openai' }, true);
  assert.deepEqual(Object.keys(problems).sort(), ['model', 'name']);
  assert.deepEqual(
    Object.keys(
      validateProvider({ name: '', kind: 'openai', model: 'm' }, false)
    ),
    []
  ); // a test needs no name
});

test('names, kinds, addresses and key variables are checked as the server checks them', () => {
  const ok = { name: 'local', kind: 'openai', model: 'm' };
  assert.ok(validateProvider({ ...ok, name: 'a/b' }, true).name);
  assert.ok(validateProvider({ ...ok, name: ' spaced' }, true).name);
  assert.ok(validateProvider({ ...ok, kind: 'gemini' }, true).kind);
  assert.deepEqual(
    validateProvider({ ...ok, kind: 'replay', model: undefined }, true),
    {}
  );
  assert.ok(
    validateProvider({ ...ok, model: 'sk-0123456789abcdef' }, true).model
  );
  for (const bad of [
    'localhost:11434',
    'ftp://host/v1',
    'http://',
    'https://user:pw@api.example.com/v1',
    'https://api.example.com/v1?api_key=x'
  ]) {
    assert.notEqual(urlProblem(bad), null, bad);
  }
  assert.equal(urlProblem('http://127.0.0.1:8000/v1'), null);
  assert.ok(
    validateProvider({ ...ok, api_key_env: 'sk-abc123' }, true).api_key_env
  );
  assert.equal(isVariableName('DEEPSEEK_API_KEY'), true);
  assert.equal(isVariableName('my_key'), true);
  assert.equal(isVariableName('a1b2c3d4e5f6a7b8c9d0e1f2'), false); // a key pasted as the name
  assert.equal(isVariableName('sk_live_abc'), false);
  assert.equal(isVariableName('1ABC'), false);
});

test('prices are optional numbers of 0 or more, with a currency code (a turn then shows its cost)', () => {
  const base = { name: 'deepseek', kind: 'openai', model: 'deepseek-chat' };
  assert.deepEqual(
    validateProvider(
      { ...base, input_per_mtok: 0.27, output_per_mtok: 1.1, currency: 'CNY' },
      true
    ),
    {}
  );
  assert.deepEqual(
    validateProvider(
      { ...base, input_per_mtok: 0, output_per_mtok: null },
      true
    ),
    {}
  );
  const problems = validateProvider(
    {
      ...base,
      input_per_mtok: -1,
      output_per_mtok: Number('cheap'),
      currency: '美元'
    },
    true
  );
  assert.deepEqual(Object.keys(problems).sort(), [
    'currency',
    'input_per_mtok',
    'output_per_mtok'
  ]);
});
