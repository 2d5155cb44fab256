// The folder map's lint rule (eslint/boundaries.js, wired in eslint.config.js) fails a wrong import:
// ESLint runs with the repository's own config on import lines given as text at paths inside src/
// (type-aware rules off: the project service knows only files on disk).
import assert from 'node:assert/strict';
import path from 'node:path';
import { before, describe, it } from 'node:test';
import { ESLint } from 'eslint';
import tseslint from 'typescript-eslint';

const ROOT = path.resolve(import.meta.dirname, '..');

let eslint: ESLint;

/** The folder-map messages ESLint reports for `code` at `file` (relative to the repository). */
async function folderMap(file: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: path.join(ROOT, file) });
  assert.ok(result, `ESLint linted ${file}`);
  return result.messages.filter((m) => m.ruleId === 'tskubelet/folder-map').map((m) => m.message);
}

describe('the folder-map lint rule', { timeout: 120_000 }, () => {
  before(() => {
    eslint = new ESLint({ cwd: ROOT, overrideConfig: tseslint.configs.disableTypeChecked });
  });

  it('reports a value import up the map (runtime/ importing kubelet/)', async () => {
    const messages = await folderMap(
      'src/runtime/kuberuntime/lint-probe.ts',
      "import { newKubelet } from '../../kubelet/index.ts';\nexport const f = newKubelet;\n",
    );
    assert.deepEqual(messages, [
      'runtime/ may not import kubelet/ (docs/architecture.md, "Map"; eslint/boundaries.js)',
    ]);
  });

  it('reports an import around a folder index.ts (kubelet/ importing pleg/pleg.ts)', async () => {
    const messages = await folderMap(
      'src/kubelet/lint-probe.ts',
      "import { createPleg } from '../pleg/pleg.ts';\nexport const f = createPleg;\n",
    );
    assert.deepEqual(messages, ["import pleg/ through its contract 'pleg/index.ts', not 'pleg/pleg.ts'"]);
  });

  it("reports an import of runtime/'s private parts from outside runtime/", async () => {
    const messages = await folderMap(
      'src/kubelet/lint-probe.ts',
      "import { createImageManager } from '../runtime/images/index.ts';\nexport const f = createImageManager;\n",
    );
    assert.deepEqual(messages, [
      "import runtime/ through its contract 'runtime/index.ts', not 'runtime/images/index.ts'",
    ]);
  });

  it('reports a value import where only types may cross (shutdown/ using kubelet/)', async () => {
    const wrong = await folderMap(
      'src/shutdown/lint-probe.ts',
      "import { newKubelet } from '../kubelet/index.ts';\nexport const f = newKubelet;\n",
    );
    assert.equal(wrong.length, 1);
    const right = await folderMap(
      'src/shutdown/lint-probe.ts',
      "import type { PodAdmitHandler } from '../kubelet/index.ts';\nexport type H = PodAdmitHandler;\n",
    );
    assert.deepEqual(right, []);
  });

  it('accepts imports through a contract, of a shared leaf, of a library file and inside runtime/', async () => {
    const cases: [string, string][] = [
      [
        'src/kubelet/lint-probe.ts',
        "import { createPleg } from '../pleg/index.ts';\nexport const f = createPleg;\n",
      ],
      [
        'src/gc/lint-probe.ts',
        "import { intAnnotation } from '../runtime/index.ts';\nexport const f = intAnnotation;\n",
      ],
      [
        'src/gc/lint-probe.ts',
        "import { isCriNotFound } from '../runtime/cri/index.ts';\nexport const f = isCriNotFound;\n",
      ],
      [
        'src/util/lint-probe.ts',
        "import { MAX_PARALLEL_CONTAINER_STARTS } from '../config/defaults.ts';\nexport const n = MAX_PARALLEL_CONTAINER_STARTS;\n",
      ],
      [
        'src/status/lint-probe.ts',
        "import { podQOSClass } from '../api/qos.ts';\nexport const f = podQOSClass;\n",
      ],
      [
        'src/runtime/kuberuntime/lint-probe.ts',
        "import { createHookRunner } from '../lifecycle/index.ts';\nexport const f = createHookRunner;\n",
      ],
    ];
    for (const [file, code] of cases) assert.deepEqual(await folderMap(file, code), [], `${file}: ${code}`);
  });

  it('reports an import from a folder the map does not know yet', async () => {
    const messages = await folderMap(
      'src/credentialprovider/lint-probe.ts',
      "import { createPleg } from '../pleg/index.ts';\nexport const f = createPleg;\n",
    );
    assert.deepEqual(messages, [
      'credentialprovider/ is not in the folder map: give it a row in FOLDERS (eslint/boundaries.js)',
    ]);
  });

  it('lets tests import anything', async () => {
    const messages = await folderMap(
      'src/runtime/kuberuntime/lint-probe.test.ts',
      "import { createPleg } from '../../pleg/pleg.ts';\nexport const f = createPleg;\n",
    );
    assert.deepEqual(messages, []);
  });
});

/** The suite-boundary messages ESLint reports for `code` at `file` (relative to the repository). */
async function suiteImports(file: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: path.join(ROOT, file) });
  assert.ok(result, `ESLint linted ${file}`);
  return result.messages.filter((m) => m.ruleId === 'no-restricted-imports').map((m) => m.message);
}

describe('the test suites import only the kit, the harness and src/', { timeout: 120_000 }, () => {
  before(() => {
    eslint = new ESLint({ cwd: ROOT, overrideConfig: tseslint.configs.disableTypeChecked });
  });

  it("reports a suite importing another suite's helper or bench/", async () => {
    const cases: [string, string][] = [
      ['test/security/lib/lint-probe.ts', '../../integration/support.ts'],
      ['test/reliability/lint-probe.ts', '../../bench/lib/scenario-env.ts'],
      ['bench/lint-probe.ts', '../test/integration/support.ts'],
    ];
    for (const [file, spec] of cases) {
      const messages = await suiteImports(file, `import { f as g } from '${spec}';\nexport const f = g;\n`);
      assert.equal(messages.length, 1, `${file}: ${spec}`);
      assert.match(
        messages[0] ?? '',
        /A suite imports only test\/kit, test\/harness and src\/ \(eslint\.config\.js, SUITES\)\.$/,
      );
    }
  });

  it('accepts the kit, the harness, src/ and the suite itself', async () => {
    const cases: [string, string][] = [
      [
        'test/security/lib/lint-probe.ts',
        "import { until } from '../../kit/poll.ts';\nexport const f = until;\n",
      ],
      [
        'test/reliability/lint-probe.ts',
        "import { startContainerd } from '../harness/index.ts';\nexport const f = startContainerd;\n",
      ],
      [
        'test/integration/lint-probe.ts',
        "import { useKubelet } from './support.ts';\nexport const f = useKubelet;\n",
      ],
      [
        'bench/lint-probe.ts',
        "import { startKubelet } from '../test/kit/kubelets.ts';\nexport const f = startKubelet;\n",
      ],
    ];
    for (const [file, code] of cases)
      assert.deepEqual(await suiteImports(file, code), [], `${file}: ${code}`);
  });
});
