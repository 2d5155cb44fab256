import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import type { Pod } from '../api/types.ts';
import { nullLogger } from '../util/logger.ts';
import { recordingLogger } from '../util/testing.ts';
import { createFileSource } from './file-source.ts';
import { manifest, snapshotRecorder } from './testing.ts';
import type { PodSource, SourceProblem } from './types.ts';

const names = (pods: Pod[]) => pods.map((p) => p.metadata.name).sort();
const hasNames =
  (...want: string[]) =>
  (pods: Pod[]) =>
    JSON.stringify(names(pods)) === JSON.stringify([...want].sort());

describe('file source', () => {
  let dir: string;
  let source: PodSource | undefined;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tskubelet-file-source-'));
  });
  afterEach(async () => {
    await source?.stop();
    source = undefined;
    await rm(dir, { recursive: true, force: true });
  });

  function start(
    path: string,
    checkFrequencyMs = 30,
    extra: { onProblem?: (p: SourceProblem) => void } = {},
  ) {
    const rec = snapshotRecorder();
    const logger = recordingLogger();
    source = createFileSource({
      path,
      nodeName: 'node1',
      checkFrequencyMs,
      logger,
      debounceMs: 10,
      ...extra,
    });
    const first = rec.next();
    source.start(rec.send);
    return { rec, first, logger };
  }

  it('reads the .yaml/.yml/.json files of the directory, not dotfiles, backups or subdirectories', async () => {
    await writeFile(join(dir, 'a.yaml'), JSON.stringify(manifest('a')));
    await writeFile(join(dir, 'a.yaml~'), JSON.stringify(manifest('backup')));
    await writeFile(join(dir, 'notes'), 'not a manifest');
    await writeFile(
      join(dir, 'b.yml'),
      `apiVersion: v1\nkind: Pod\nmetadata:\n  name: b\nspec:\n  containers:\n  - name: c\n    image: x:1\n`,
    );
    await writeFile(join(dir, '.hidden.yaml'), JSON.stringify(manifest('hidden')));
    await mkdir(join(dir, 'sub'));
    await writeFile(join(dir, 'sub', 'c.yaml'), JSON.stringify(manifest('c')));
    const { first } = start(dir);
    const pods = await first;
    assert.deepEqual(names(pods), ['a-node1', 'b-node1']);
    assert.equal(pods[0]?.metadata.annotations?.['kubernetes.io/config.source'], 'file');
  });

  it('follows files being added, edited and removed', async () => {
    const { rec, first } = start(dir);
    assert.deepEqual(await first, []);
    const added = rec.next(hasNames('a-node1'));
    await writeFile(join(dir, 'a.yaml'), JSON.stringify(manifest('a')));
    const [a1] = await added;

    const edited = rec.next(
      (pods) => pods.length === 1 && pods[0]?.spec.containers[0]?.image === 'busybox:1.30',
    );
    await writeFile(join(dir, 'a.yaml'), JSON.stringify(manifest('a', 'busybox:1.30')));
    const [a2] = await edited;
    assert.notEqual(a2?.metadata.uid, a1?.metadata.uid, 'an edit is a new pod');

    const removed = rec.next((pods) => pods.length === 0);
    await rm(join(dir, 'a.yaml'));
    await removed;
  });

  it('skips a bad file, keeps the good ones, and reports it once', async () => {
    const problems: SourceProblem[] = [];
    await writeFile(join(dir, 'good.yaml'), JSON.stringify(manifest('good')));
    await writeFile(join(dir, 'bad.yaml'), JSON.stringify(manifest('bad', '')));
    await writeFile(join(dir, 'garbage.yaml'), 'a: [1, 2\n');
    const { rec, first, logger } = start(dir, 20, { onProblem: (p) => problems.push(p) });
    assert.deepEqual(names(await first), ['good-node1']);
    // Several more re-reads of the same broken files.
    for (let i = 0; i < 3; i++) await rec.next();
    assert.equal(problems.length, 2);
    const bad = problems.find((p) => p.origin === join(dir, 'bad.yaml'));
    assert.equal(bad?.reason, 'InvalidManifest');
    assert.match(bad?.message ?? '', /spec\.containers\[0\]\.image: Required value/);
    assert.match(problems.find((p) => p.origin === join(dir, 'garbage.yaml'))?.message ?? '', /YAML/);
    assert.equal(
      logger.lines.filter((l) => l.level === 'warn' && l.fields.origin === join(dir, 'bad.yaml')).length,
      1,
    );

    const fixed = rec.next(hasNames('good-node1', 'bad-node1'));
    await writeFile(join(dir, 'bad.yaml'), JSON.stringify(manifest('bad')));
    await fixed;
  });

  it('uses the first of two files defining the same pod and reports the other', async () => {
    const problems: SourceProblem[] = [];
    await writeFile(join(dir, 'a.yaml'), JSON.stringify(manifest('web')));
    await writeFile(join(dir, 'b.yaml'), JSON.stringify(manifest('web', 'busybox:1.30')));
    const { first } = start(dir, 30, { onProblem: (p) => problems.push(p) });
    const pods = await first;
    assert.equal(pods.length, 1);
    assert.equal(pods[0]?.spec.containers[0]?.image, 'busybox:1.29');
    assert.equal(problems[0]?.reason, 'DuplicatePod');
    assert.equal(problems[0]?.origin, join(dir, 'b.yaml'));
    assert.match(problems[0]?.message ?? '', /already defined by .*a\.yaml/);
  });

  it('reports a PodList file as invalid (one Pod per file)', async () => {
    const problems: SourceProblem[] = [];
    await writeFile(
      join(dir, 'list.yaml'),
      JSON.stringify({ apiVersion: 'v1', kind: 'PodList', items: [manifest('a')] }),
    );
    const { first } = start(dir, 30, { onProblem: (p) => problems.push(p) });
    assert.deepEqual(await first, []);
    assert.match(problems[0]?.message ?? '', /kind: expected "Pod"/);
  });

  it('sends an empty snapshot for a missing directory and picks it up once created', async () => {
    const missing = join(dir, 'manifests');
    const { rec, first } = start(missing);
    assert.deepEqual(await first, []);
    const appeared = rec.next(hasNames('a-node1'));
    await mkdir(missing);
    await writeFile(join(missing, 'a.yaml'), JSON.stringify(manifest('a')));
    await appeared;
    const gone = rec.next((pods) => pods.length === 0);
    await rm(missing, { recursive: true });
    await gone;
  });

  it('reads a single file path, and keeps the last good pod while that file is broken', async () => {
    const file = join(dir, 'only.yaml');
    await writeFile(file, JSON.stringify(manifest('only')));
    const problems: SourceProblem[] = [];
    const { rec, first } = start(file, 20, { onProblem: (p) => problems.push(p) });
    assert.deepEqual(names(await first), ['only-node1']);
    const countBefore = rec.seen.length;
    await writeFile(file, 'kind: Pod\nspec: [\n');
    while (problems.length === 0) await new Promise((r) => setTimeout(r, 5));
    assert.equal(problems[0]?.origin, file);
    // No snapshot was sent for the broken content: the previous pod stays in force.
    assert.ok(rec.seen.slice(countBefore).every((pods) => hasNames('only-node1')(pods)));
  });

  it('notices changes through the watch long before the next periodic re-read', async () => {
    const { rec, first } = start(dir, 3_600_000);
    await first;
    const added = rec.next(hasNames('a-node1'));
    await writeFile(join(dir, 'a.yaml'), JSON.stringify(manifest('a')));
    await added;
    // An atomic replace: write a hidden temp file, rename it over the manifest.
    const replaced = rec.next((pods) => pods[0]?.spec.containers[0]?.image === 'busybox:1.31');
    await writeFile(join(dir, '.a.yaml.tmp'), JSON.stringify(manifest('a', 'busybox:1.31')));
    await rename(join(dir, '.a.yaml.tmp'), join(dir, 'a.yaml'));
    await replaced;
  });

  it('notices the directory being created through a watch on its parent', async () => {
    const missing = join(dir, 'manifests');
    const { rec, first } = start(missing, 3_600_000);
    assert.deepEqual(await first, []);
    const appeared = rec.next(hasNames('a-node1'));
    await mkdir(missing);
    await writeFile(join(missing, 'a.yaml'), JSON.stringify(manifest('a')));
    await appeared;
  });

  it('sends nothing after stop', async () => {
    const { rec, first } = start(dir, 10);
    await first;
    await source?.stop();
    const count = rec.seen.length;
    await writeFile(join(dir, 'a.yaml'), JSON.stringify(manifest('a')));
    // Give a would-be timer or watch event every chance to fire: several periods' worth of turns.
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(rec.seen.length, count);
  });

  it('uses the path (trailing slash trimmed) in the UID', async () => {
    await writeFile(join(dir, 'a.yaml'), JSON.stringify(manifest('a')));
    const rec1 = snapshotRecorder();
    const s1 = createFileSource({
      path: dir + '/',
      nodeName: 'node1',
      checkFrequencyMs: 1000,
      logger: nullLogger,
    });
    const p1 = rec1.next();
    s1.start(rec1.send);
    const [a] = await p1;
    await s1.stop();
    const { first } = start(dir);
    const [b] = await first;
    assert.equal(a?.metadata.uid, b?.metadata.uid);
  });
});
