// Lint rules: typescript-eslint's recommended type-aware set, plus this codebase's own (the folder map of docs/architecture.md).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import boundaries from './eslint/boundaries.js';

/**
 * The test suites on the bed: each imports only the test kit (test/kit), the harness (test/harness)
 * and src/, never another suite's files nor bench/'s; bench/ imports no suite either.
 */
const SUITES = ['integration', 'reliability', 'security', 'node-vm'];

function suiteBoundary(files, forbidden) {
  return {
    files,
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: `^(\\.\\./)+(test/)?(${forbidden.join('|')})/`,
              message: 'A suite imports only test/kit, test/harness and src/ (eslint.config.js, SUITES).',
            },
          ],
        },
      ],
    },
  };
}

export default tseslint.config(
  {
    ignores: ['node_modules/', 'bench/results/', '.tmp/', 'dist/', 'dist.next/', 'dist.old/', 'build/'],
  },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-floating-promises': [
        'error',
        {
          allowForKnownSafeCalls: [
            { from: 'package', package: 'node:test', name: ['describe', 'it', 'test', 'suite'] },
          ],
        },
      ],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-empty': ['error', { allowEmptyCatch: false }],
    },
  },
  {
    // What the kubelet process runs: no call that keeps memory resident for good for nothing
    // (bench/results/2026-11-24-lean-process.md).
    files: ['src/**/*.ts'],
    ignores: ['src/**/*.test.ts', 'src/**/testing.ts'],
    rules: {
      'no-restricted-properties': [
        'error',
        {
          property: 'localeCompare',
          message:
            'ICU collation data (~2 MiB) stays resident once used; compareStrings (src/util/compare.ts) orders by code unit, as Go does.',
        },
      ],
      'no-restricted-imports': [
        'error',
        {
          paths: [
            {
              name: 'node:http',
              allowTypeImports: true,
              message:
                "An ES-module import of node:http loads undici (~2.5 MiB); import from src/util/node-http.ts (require'd).",
            },
            {
              name: '@grpc/grpc-js',
              message:
                "The kubelet's gRPC calls go over src/util/grpc-h2.ts (node:http2): grpc-js costs ~1.7 MiB resident and ~2x the CPU per call; it serves tests' servers only.",
            },
          ],
        },
      ],
    },
  },
  {
    // The folder map: layers and index.ts contracts (eslint/boundaries.js).
    files: ['src/**/*.ts'],
    plugins: { tskubelet: boundaries },
    rules: { 'tskubelet/folder-map': 'error' },
  },
  ...SUITES.map((suite) =>
    suiteBoundary([`test/${suite}/**/*.ts`], [...SUITES.filter((s) => s !== suite), 'bench']),
  ),
  suiteBoundary(['bench/**/*.ts'], SUITES),
  {
    files: ['**/*.js'],
    ...tseslint.configs.disableTypeChecked,
  },
  {
    // The node console's page script runs in the browser.
    files: ['src/console/static/**/*.js'],
    languageOptions: {
      sourceType: 'module',
      globals: Object.fromEntries(
        [
          'AbortController',
          'EventSource',
          'TextDecoderStream',
          'console',
          'document',
          'fetch',
          'history',
          'location',
          'addEventListener',
          'matchMedia',
        ].map((name) => [name, 'readonly']),
      ),
    },
  },
);
