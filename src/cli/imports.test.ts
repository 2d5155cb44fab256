import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { promisify } from 'node:util';

/**
 * What a fresh process holds once the kubelet's modules are imported (what `main` imports before
 * it parses flags). Each entry costs resident memory the kubelet would pay for nothing
 * (bench/results/2026-11-24-lean-process.md).
 */
async function loadedAfterImport(): Promise<string[]> {
  const script = `
    await import(${JSON.stringify(join(import.meta.dirname, 'run.ts'))});
    await import(${JSON.stringify(join(import.meta.dirname, 'flags.ts'))});
    process.stdout.write(JSON.stringify(process.moduleLoadList));`;
  const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], {
    timeout: 30_000,
  });
  return JSON.parse(stdout) as string[];
}

describe('the kubelet modules at import', () => {
  it('do not load undici (fetch): node:http is required, not imported, and fetch is used only by --manifest-url', async () => {
    const loaded = await loadedAfterImport();
    assert.ok(loaded.length > 100, 'the list of loaded built-in modules came back');
    assert.deepEqual(
      loaded.filter((m) => m.includes('undici')),
      [],
    );
  });
});

describe('the node CLI commands at import', () => {
  it('load commander only: their HTTP, TLS, YAML and printer code waits until a command runs', async () => {
    const script = `
      const { registerHooks } = await import('node:module');
      const resolved = [];
      registerHooks({ resolve(spec, ctx, next) { const r = next(spec, ctx); resolved.push(r.url); return r; } });
      await import('commander');
      const before = new Set(process.moduleLoadList);
      const { addNodeCommands } = await import(${JSON.stringify(join(import.meta.dirname, 'node', 'index.ts'))});
      const { Command } = await import('commander');
      addNodeCommands(new Command('tskubelet'));
      process.stdout.write(JSON.stringify({
        builtins: process.moduleLoadList.filter((m) => !before.has(m)),
        modules: resolved.filter((u) => u.startsWith('file:') && !u.includes('/node_modules/commander/')),
      }));`;
    const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], {
      timeout: 30_000,
    });
    const { builtins, modules } = JSON.parse(stdout) as { builtins: string[]; modules: string[] };
    assert.deepEqual(
      modules.map((u) => u.replace(/^.*\/src\//, 'src/')),
      ['src/cli/node/index.ts'],
    );
    assert.deepEqual(
      builtins.filter((m) => /\b(https?|tls|net|crypto|undici)\b/.test(m)),
      [],
    );
  });
});
