/**
 * CEL regular expressions (item 10 of the bounded-under-attack issue): `matches()`, and the
 * Kubernetes library's `find()` and `findAll()`, run on RE2 (re2js) whatever the process flags,
 * with Go's syntax and semantics, and a pattern Kubernetes CEL would refuse is refused at load with
 * its position.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { compileExpression, toCelVariables } from '../../src/tenancy/cel.js';
import type { ExpressionResultType } from '../../src/tenancy/cel.js';
import { parsePolicyFile } from '../../src/tenancy/policy-directory.js';
import { formatPolicyLoadError } from '../../src/tenancy/policy.js';

const root = join(import.meta.dirname, '..', '..');

const variables = toCelVariables({
  object: { metadata: { name: 'app', annotations: { note: 'baaa' } } },
  oldObject: undefined,
  namespaceObject: { metadata: { name: 'team-a-dev' } },
  request: {},
});

function evaluate(source: string, type: ExpressionResultType = 'bool'): unknown {
  const compiled = compileExpression(source, type);
  assert.equal(compiled.error, undefined, compiled.error?.message);
  return compiled.expression.evaluate(variables);
}

describe('CEL regular expressions read patterns as Go (RE2) does, not as JavaScript does', () => {
  const rows: { name: string; source: string; want: unknown; type?: ExpressionResultType }[] = [
    // JavaScript throws on `(?i)` (an invalid group); RE2 sets the flag.
    { name: 'a leading (?i) makes the match case-insensitive', source: "'ABC'.matches('(?i)^abc$')", want: true },
    // JavaScript reads `\z` as the letter z, RE2 as the end of the text.
    { name: '\\z is the end of the text, not the letter z', source: "'az'.matches('a\\\\z')", want: false },
    { name: '\\pL is a Unicode letter class', source: "'é'.matches('^\\\\pL$')", want: true },
    { name: '\\d is ASCII only', source: "'١'.matches('\\\\d')", want: false },
    { name: '$ does not match before a final newline', source: "'a\\n'.matches('a$')", want: false },
    { name: 'matches() searches, unanchored', source: "namespaceObject.metadata.name.matches('a-d')", want: true },
    { name: 'the global form matches(text, pattern)', source: "matches(namespaceObject.metadata.name, '-dev$')", want: true },
    { name: 'find() gives the leftmost match', source: "'abc 123 456'.find('[0-9]+')", want: '123', type: 'string' },
    { name: "find() gives '' without a match", source: "'abc'.find('[0-9]+')", want: '', type: 'string' },
    {
      name: 'findAll() skips an empty match that abuts the previous one, as Go does',
      source: "object.metadata.annotations.note.findAll('a*') == ['', 'aaa']",
      want: true,
    },
    { name: 'findAll() with a limit', source: "'123 abc 456'.findAll('[0-9]+', 1) == ['123']", want: true },
    { name: 'findAll() without a match is an empty list', source: "'abc'.findAll('[0-9]').size() == 0", want: true },
    {
      name: 'inside a comprehension',
      source: "['team-a', 'x'].exists(n, n.matches('^team-[a-z0-9]+$'))",
      want: true,
    },
  ];
  for (const row of rows) {
    it(row.name, () => {
      assert.equal(evaluate(row.source, row.type), row.want);
    });
  }
});

describe('a policy whose regex Kubernetes CEL would refuse is refused at load with its position', () => {
  const rows: { name: string; source: string; message: RegExp; column: number }[] = [
    {
      name: 'a lookahead',
      source: "namespaceObject.metadata.name.matches('^team-(?=a)')",
      message: /^matches\(\): error parsing regexp: invalid or unsupported Perl syntax: `\(\?=`/,
      column: 39,
    },
    {
      name: 'a lookbehind',
      source: "namespaceObject.metadata.name.matches('(?<=team-)a')",
      message: /^matches\(\): error parsing regexp: invalid named capture: `\(\?<=team-\)a`/,
      column: 39,
    },
    {
      name: 'a backreference',
      source: "'aa'.matches('(a)\\\\1')",
      message: /error parsing regexp: invalid escape sequence: `\\1`/,
      column: 14,
    },
    { name: 'an unclosed group', source: "'a'.matches('(a')", message: /error parsing regexp: missing closing \): `\(a`/, column: 13 },
    { name: 'a repeat count over 1,000', source: "'a'.matches('a{1001}')", message: /invalid repeat count: `\{1001\}`/, column: 13 },
    { name: '\\Z, which Go does not know', source: "'a'.matches('a\\\\Z')", message: /invalid escape sequence: `\\Z`/, column: 13 },
    {
      name: 'in find()',
      source: "'a'.find('(?!a)') == ''",
      message: /^find\(\): error parsing regexp: invalid or unsupported Perl syntax: `\(\?!`/,
      column: 10,
    },
    {
      name: 'in findAll() with a limit',
      source: "'a'.findAll('[z-a]', 2).size() == 0",
      message: /^findAll\(\): .*invalid character class range/,
      column: 13,
    },
    { name: 'in the global matches()', source: "matches('a', '*')", message: /missing argument to repetition operator: `\*`/, column: 14 },
  ];
  for (const row of rows) {
    it(row.name, () => {
      const result = compileExpression(row.source, 'bool');
      assert.ok(result.error !== undefined, 'refused at load');
      assert.match(result.error.message, row.message);
      assert.equal(result.error.position?.column, row.column);
    });
  }

  it('a pattern that is not a string literal is refused at load, at the pattern', () => {
    const result = compileExpression("namespaceObject.metadata.name.matches(object.metadata.annotations['re'])", 'bool');
    assert.ok(result.error !== undefined);
    assert.match(result.error.message, /^the pattern of matches\(\) must be a string literal/);
    assert.equal(result.error.position?.column, 39);
  });

  it('a policy file with such a pattern fails to load, naming the file, the field and the column', () => {
    const yaml = [
      'apiVersion: tolerator.dev/v1alpha1',
      'kind: TenancyPolicy',
      'metadata: {name: lookahead}',
      'spec:',
      `  group: "namespaceObject.metadata.name.matches('^team-(?=a)') ? 'team-a' : ''"`,
      '  taint: {key: tenant, effect: NoSchedule}',
      '  nodeLabel: tenant',
    ].join('\n');
    const loaded = parsePolicyFile('lookahead.yaml', yaml);
    assert.equal(loaded.policies.length, 0);
    assert.match(
      loaded.errors.map(formatPolicyLoadError).join('\n'),
      /^lookahead\.yaml:5: TenancyPolicy "lookahead": spec\.group: line 1, column 39 of the expression: matches\(\): error parsing regexp: invalid or unsupported Perl syntax/,
    );
  });

  it('type errors name matches() and string, as the author wrote them', () => {
    const result = compileExpression("1.matches('a')", 'bool');
    assert.match(result.error?.message ?? '', /found no matching overload for 'int\.matches\(string\)'/);
  });
});

describe('CEL regular expressions are safe without the V8 flag', () => {
  it("'^(a+)+$' against a tenant's annotation, in a process without --enable-experimental-regexp-engine-on-excessive-backtracks, answers and costs linear work at n and 4n", () => {
    // 60,000 and 240,000 characters: the larger within the API server's 256 KiB of annotations. A
    // backtracking engine needs 2^n steps, so before RE2 the child never finished: the timeout is
    // the hang detector, not a speed bound (the child takes about a second, mostly loading tsx).
    const n = 60_000;
    const result = spawnSync(process.execPath, ['--import', 'tsx', 'test/support/regex-without-flag.ts', String(n)], {
      cwd: root,
      encoding: 'utf8',
      timeout: 120_000,
      // A child stuck in a regular expression does not get to handle SIGTERM.
      killSignal: 'SIGKILL',
    });
    assert.equal(result.status, 0, `the child did not finish (signal ${String(result.signal)}): ${result.stderr}`);
    const { flagged, exempt, micros } = JSON.parse(result.stdout) as { flagged: boolean; exempt: boolean; micros: [number, number] };
    assert.equal(flagged, false, 'the child runs without the flag');
    assert.equal(exempt, false, "'^(a+)+$' does not match a run of a followed by !");
    // Linear work grows 4-fold; 6.5, tighter than review-cost.slow.test.ts's 8, far below
    // the 16-fold of quadratic work (and the 2^(3n)-fold of backtracking).
    const ratio = micros[1] / Math.max(micros[0], 1);
    assert.ok(ratio < 6.5, `CPU time grew ${ratio.toFixed(1)}-fold from n to 4n (${micros.join(' µs, ')} µs)`);
  });
});
