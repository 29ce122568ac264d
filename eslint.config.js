import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', '.toolchain/**', 'tmp/**', 'src/lib/cri/gen/**', 'coverage/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['src/lib/**/*.ts'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      // The core library knows no command line and no terminal UI: those live
      // in src/commands, src/base-command.ts and src/ui, which call into it.
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['@oclif/*', 'ink', 'ink/*', 'react', 'react/*', 'listr2', 'listr2/*'],
              message: 'src/lib imports no CLI or UI package: put this in src/commands or src/ui.',
            },
            {
              group: ['**/commands/*', '**/commands', '**/base-command', '**/base-command.js', '**/ui/*'],
              message: 'src/lib does not import the command layer.',
            },
          ],
        },
      ],
      'no-restricted-syntax': [
        'error',
        {
          selector: 'ImportExpression[source.value=/^(@oclif\\/|ink$|react$|listr2$)|commands\\/|base-command|\\/ui\\//]',
          message: 'src/lib imports no CLI or UI package and not the command layer, not even lazily.',
        },
        {
          selector: 'TSImportType[argument.literal.value=/^(@oclif\\/|ink$|react$|listr2$)|commands\\/|base-command|\\/ui\\//]',
          message: 'src/lib imports no CLI or UI package and not the command layer, not even for types.',
        },
      ],
    },
  },
  {
    files: ['**/*.ts', '**/*.tsx'],
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    files: ['scripts/**/*.js', 'bin/**/*.js', 'bench/**/*.js'],
    languageOptions: {
      globals: { process: 'readonly', console: 'readonly', URL: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly', setInterval: 'readonly', clearInterval: 'readonly', AbortController: 'readonly', Buffer: 'readonly', performance: 'readonly' },
    },
  },
);
