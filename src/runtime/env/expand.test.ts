import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { expandSubPathExpr, expandVars } from './expand.ts';
import { hasCode } from '../../util/errors.ts';

// The case table follows upstream third_party/forked/golang/expansion expand_test.go (doExpansionTest).
const context: Record<string, string> = {
  VAR_A: 'A',
  VAR_B: 'B',
  VAR_C: 'C',
  VAR_REF: '$(VAR_A)',
  VAR_EMPTY: '',
};
const lookup = (name: string) => (Object.hasOwn(context, name) ? context[name] : undefined);

describe('expandVars', () => {
  const cases: [string, string, string][] = [
    ['whole string', '$(VAR_A)', 'A'],
    ['repeat', '$(VAR_A)-$(VAR_A)', 'A-A'],
    ['beginning', '$(VAR_A)-1', 'A-1'],
    ['middle', '___$(VAR_B)___', '___B___'],
    ['end', '___$(VAR_C)', '___C'],
    ['compound', '$(VAR_A)_$(VAR_B)_$(VAR_C)', 'A_B_C'],
    ['escape & expand', '$$(VAR_B)_$(VAR_A)', '$(VAR_B)_A'],
    ['compound escape', '$$(VAR_A)_$$(VAR_B)', '$(VAR_A)_$(VAR_B)'],
    ['mixed in escapes', 'f000-$$VAR_A', 'f000-$VAR_A'],
    ['backslash escape ignored', 'foo\\$(VAR_C)bar', 'foo\\Cbar'],
    ['double backslash escape ignored', 'foo\\\\$(VAR_C)bar', 'foo\\\\Cbar'],
    ['lots of backslashes', 'foo\\\\\\\\$(VAR_A)bar', 'foo\\\\\\\\Abar'],
    ['nested var references', '$(VAR_A$(VAR_B))', '$(VAR_A$(VAR_B))'],
    ['nested var references second type', '$(VAR_A$(VAR_B)', '$(VAR_A$(VAR_B)'],
    ['value is a reference (not expanded again)', '$(VAR_REF)', '$(VAR_A)'],
    ['value is a reference x 2', '%%$(VAR_REF)--$(VAR_REF)%%', '%%$(VAR_A)--$(VAR_A)%%'],
    ['empty var', 'foo$(VAR_EMPTY)bar', 'foobar'],
    ['unterminated expression', 'foo$(VAR_Awhoops!', 'foo$(VAR_Awhoops!'],
    ['expression without operator', 'f00__(VAR_A)__', 'f00__(VAR_A)__'],
    ['shell special vars pass through', '$?_boo_$!', '$?_boo_$!'],
    ['bare operators are ignored', '$VAR_A', '$VAR_A'],
    ['undefined vars are passed through', '$(VAR_DNE)', '$(VAR_DNE)'],
    ['multiple (even) operators, var undefined', '$$$$$$(BIG_MONEY)', '$$$(BIG_MONEY)'],
    ['multiple (even) operators, var defined', '$$$$$$(VAR_A)', '$$$(VAR_A)'],
    ['multiple (odd) operators, var undefined', '$$$$$$$(GOOD_ODDS)', '$$$$(GOOD_ODDS)'],
    ['multiple (odd) operators, var defined', '$$$$$$$(VAR_A)', '$$$A'],
    ['missing open expression', '$VAR_A)', '$VAR_A)'],
    ['shell syntax ignored', '${VAR_A}', '${VAR_A}'],
    ['trailing incomplete expression not consumed', '$(VAR_B)_______$(A', 'B_______$(A'],
    ['trailing incomplete expression, no content, is not consumed', '$(VAR_C)_______$(', 'C_______$('],
    ['operator at end of input string is preserved', '$(VAR_A)foobarzab$', 'Afoobarzab$'],
    ['shell escaped incomplete expr', 'foo-\\$(VAR_A', 'foo-\\$(VAR_A'],
    ['lots of $( in middle', '--$($($($($--', '--$($($($($--'],
    ['lots of $( in beginning', '$($($($($--foo$(', '$($($($($--foo$('],
    ['lots of $( at end', 'foo0--$($($($(', 'foo0--$($($($('],
    ['escaped operators in variable names are not escaped', '$(foo$$var)', '$(foo$$var)'],
    ['newline not expanded', '\n', '\n'],
    ['empty input', '', ''],
    ['empty name is looked up as such and left alone when undefined', '$()', '$()'],
    // Upstream reads an unterminated "$(" as two literal characters and keeps scanning after it, so an
    // escape later in the string is still honoured.
    ['escape after an unterminated expression is still honoured', 'x$(a $$b', 'x$(a $b'],
  ];
  for (const [name, input, want] of cases) {
    it(`${name}: ${JSON.stringify(input)} → ${JSON.stringify(want)}`, () => {
      assert.equal(expandVars(input, lookup), want);
    });
  }

  it('asks the lookup only for complete references', () => {
    const asked: string[] = [];
    expandVars('$(A)-$$(B)-$(C', (n) => {
      asked.push(n);
      return undefined;
    });
    assert.deepEqual(asked, ['A']);
  });
});

describe('expandSubPathExpr (upstream ExpandContainerVolumeMounts)', () => {
  const env = new Map([
    ['POD_NAME', 'web-0'],
    ['NS', 'prod'],
    ['EMPTY', ''],
  ]);
  it('expands every $(VAR) from the container environment', () => {
    assert.equal(expandSubPathExpr('$(NS)/$(POD_NAME)/logs', env), 'prod/web-0/logs');
    assert.equal(expandSubPathExpr('plain', env), 'plain');
  });
  it('refuses a variable that is missing or empty, naming each', () => {
    assert.throws(
      () => expandSubPathExpr('$(NOPE)/$(EMPTY)/$(POD_NAME)', env),
      (err: unknown) =>
        hasCode(err, 'InvalidArgument') && /missing value for EMPTY, NOPE$/.test((err as Error).message),
    );
  });
});
