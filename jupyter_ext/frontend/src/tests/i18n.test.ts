/**
 * One language for the sidebar: which language `setLanguage` picks, what `__()` answers, and that
 * zh.ts holds a Chinese form for every string the sources mark (`__('...')`, `N_('...')`), with the
 * same placeholders. The sources are read as files, so a string added anywhere in src/ is checked.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { test } from 'node:test';

import { __, language, N_, setLanguage } from '../i18n';
import { ZH } from '../zh';

const SRC = resolve(__dirname, '..', '..', 'src'); // from test-build/tests/
// A string literal (kept) or a comment (dropped), so that marks in comments do not count.
const TOKENS =
  /('(?:\\.|[^'\\\n])*'|"(?:\\.|[^"\\\n])*"|`(?:\\.|[^`\\])*`)|\/\/[^\n]*|\/\*[\s\S]*?\*\//g;
// __( and N_( as this sidebar's functions: not JupyterLab's trans.__( (a method, after a dot)
const MARKED =
  /(?<![\w.$])(?:__|N_)\(\s*('(?:\\.|[^'\\\n])*'|"(?:\\.|[^"\\\n])*"|`(?:\\.|[^`\\])*`)/g;

/** The strings marked in one source file, with the marks that are not plain literals. */
function marked(source: string): { strings: string[]; templates: string[] } {
  const code = source.replace(TOKENS, (all, literal) => literal ?? '');
  const strings: string[] = [];
  const templates: string[] = [];
  for (const match of code.matchAll(MARKED)) {
    const literal = match[1];
    if (literal.startsWith('`')) {
      templates.push(literal);
    } else {
      strings.push(literal.slice(1, -1).replace(/\\(.)/g, '$1'));
    }
  }
  return { strings, templates };
}

function sources(): Map<string, string> {
  const files = readdirSync(SRC).filter(
    name => name.endsWith('.ts') && !name.endsWith('.d.ts')
  );
  return new Map(
    files.map(name => [name, readFileSync(join(SRC, name), 'utf-8')])
  );
}

test('every string marked in src/ has its Chinese form in zh.ts', () => {
  const missing: string[] = [];
  const templates: string[] = [];
  let count = 0;
  for (const [file, source] of sources()) {
    const found = marked(source);
    count += found.strings.length;
    missing.push(
      ...found.strings
        .filter(text => !(text in ZH))
        .map(text => `${file}: ${JSON.stringify(text)}`)
    );
    templates.push(...found.templates.map(text => `${file}: ${text}`));
  }
  assert.ok(
    count > 100,
    `only ${count} marked strings found: is the scan reading src/?`
  );
  assert.deepEqual(missing, [], 'strings without a Chinese form in zh.ts');
  assert.deepEqual(
    templates,
    [],
    "a template literal cannot be looked up: write __('... %1', value)"
  );
});

test("the scan sees this sidebar's marks in code, not in comments nor JupyterLab's trans.__(), and reads escaped quotes", () => {
  const found = marked(
    `// __('in a comment')\n/* N_("in a block") */\nconst a = __('It\\'s %1', x) + N_("say \\"hi\\"") + __(\`t \${x}\`) + trans.__('Other');`
  );
  assert.deepEqual(found.strings, ["It's %1", 'say "hi"']);
  assert.equal(found.templates.length, 1);
});

test('each Chinese form keeps the placeholders of its English', () => {
  const placeholders = (text: string) =>
    [...new Set(text.match(/%\d+/g) ?? [])].sort().join(' ');
  const different = Object.entries(ZH).filter(
    ([english, chinese]) => placeholders(english) !== placeholders(chinese)
  );
  assert.deepEqual(different, []);
});

test('ui.language forces a language; otherwise JupyterLab decides', () => {
  try {
    assert.equal(setLanguage('zh', 'en'), 'zh');
    assert.equal(setLanguage('en', 'zh-CN'), 'en');
    assert.equal(setLanguage('auto', 'zh-CN'), 'zh');
    assert.equal(setLanguage('auto', 'zh_CN'), 'zh');
    assert.equal(setLanguage('auto', 'en'), 'en');
    assert.equal(setLanguage('auto', 'fr-FR'), 'en'); // no French strings: English
    assert.equal(setLanguage(null, undefined), 'en');
    assert.equal(language(), 'en');
  } finally {
    setLanguage('en', 'en');
  }
});

test('__() answers in the chosen language and fills %1, %2', () => {
  try {
    setLanguage('zh', null);
    assert.equal(__('Reports'), '报告');
    assert.equal(__('Report written: %1', 'March'), '报告已写好：March');
    assert.equal(__('Not in zh.ts: %1 of %2', 3, 4), 'Not in zh.ts: 3 of 4'); // falls back to the English
    assert.equal(__(N_('Formal tone')), '语气正式');
    setLanguage('en', null);
    assert.equal(__('Report written: %1', 'March'), 'Report written: March');
    assert.equal(__('%1 of %2, not %3', 1, 2), '1 of 2, not %3');
  } finally {
    setLanguage('en', 'en');
  }
});
