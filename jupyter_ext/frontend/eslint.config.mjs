// ESLint for the sidebar's TypeScript (flat config): the recommended rules of ESLint and
// typescript-eslint, a few of JupyterLab's extension template (curly, eqeqeq, one quote style), and
// eslint-config-prettier last, so that layout is prettier's alone (`jlpm lint` runs both).
import js from '@eslint/js';
import prettier from 'eslint-config-prettier';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: [
      'lib/',
      'test-build/',
      'node_modules/',
      '../labextension/',
      '*.mjs'
    ]
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['src/**/*.ts'],
    rules: {
      curly: ['error', 'all'],
      eqeqeq: ['error', 'smart'],
      'prefer-arrow-callback': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { args: 'none' }],
      // JSON read from nini's REST API is `any` where it comes in (api.ts) and narrowed where it is
      // used, as in JupyterLab's extension template, which turns this rule off too
      '@typescript-eslint/no-explicit-any': 'off'
    }
  },
  prettier
);
