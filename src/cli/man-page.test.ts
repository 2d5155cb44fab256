import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Command, Option } from 'commander';
import { buildRunCommand } from './flags.ts';
import { renderManPage, roffEscape } from './man-page.ts';

function page(options: Command, commands: Command[] = []): string {
  return renderManPage({
    name: 'tskubelet',
    section: '1',
    source: 'tskubelet 0.1.0',
    date: '2026-11-28',
    summary: 'the node agent',
    synopsis: ['tskubelet run [OPTIONS]'],
    description: ['Runs pods.'],
    options,
    commands,
  });
}

describe('man page', () => {
  it('lists every flag run --help lists, and none of the hidden (ignored upstream) flags', () => {
    const run = buildRunCommand(() => Promise.resolve());
    const text = page(run);
    const visible = run.options.filter((o) => !o.hidden);
    const hidden = run.options.filter((o) => o.hidden);
    assert.ok(visible.length > 50, `only ${visible.length} visible options`);
    assert.ok(hidden.length > 0, 'no hidden option to check against');
    const terms = text
      .split('\n')
      .filter((_, i, lines) => lines[i - 1] === '.TP')
      .map((l) => /^\\fB(.*?)\\fR/.exec(l)?.[1]?.replace(/\\-/g, '-'));
    assert.deepEqual(
      terms,
      visible.map((o) => o.flags.split(/\s+[<[]/)[0]),
    );
    for (const o of hidden) assert.ok(!text.includes(`\\fB${roffEscape(o.long ?? '')}\\fR`), o.flags);
  });

  it('escapes what roff would read as requests or escapes', () => {
    const cmd = new Command('x').addOption(
      new Option('--dir <path>', ".hidden request\n'quoted and C:\\path"),
    );
    const text = page(cmd);
    assert.ok(text.includes("\\&.hidden request\n\\&'quoted and C:\\epath"), text);
    assert.ok(text.includes('\\fB\\-\\-dir\\fR \\fI<path>\\fR'), text);
  });

  it('names each command with its arguments', () => {
    const program = new Command('tskubelet');
    program.command('logs').description('print a log').argument('<name>').argument('[container]');
    const text = page(new Command('run'), [...program.commands]);
    assert.ok(text.includes('.SH COMMANDS\n.TP\n\\fBlogs\\fR \\fI<name> [container]\\fR\nprint a log'), text);
  });
});
