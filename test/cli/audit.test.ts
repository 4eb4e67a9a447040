import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { defaultExcludedNamespaceLabel, defaultExcludedNamespaces } from '../../src/cli/audit.js';
import { audit, stateFile } from '../support/audit-command.js';
import {
  auditNamespaces,
  auditNodes,
  auditSkipRows,
  expectedRulesByPod,
  podKey,
  policiesDir,
  storedPod,
} from '../support/audit-fixtures.js';

const root = join(import.meta.dirname, '..', '..');

interface JsonOutput {
  violations: { namespace: string; name: string; node: string; rule: string; message: string; policy?: string }[];
  undecided: unknown[];
  summary: { audited: number; skipped: Record<string, number>; undecided: number; byRule: Record<string, number> };
}

function rulesByPod(output: JsonOutput): Map<string, string[]> {
  const byPod = new Map<string, string[]>();
  for (const violation of output.violations) {
    const key = `${violation.namespace}/${violation.name}`;
    byPod.set(key, [...(byPod.get(key) ?? []), violation.rule].sort());
  }
  return byPod;
}

/** Pods with no violation are absent from the output: compare only those expected to have some. */
function withViolations(expected: Map<string, string[]>): Map<string, string[]> {
  return new Map([...expected].filter(([, rules]) => rules.length > 0));
}

/** The fixture's flags: its file, the shipped policies, and PodNodeSelector on (it is off by default). */
const fixtureFlags = ['--cluster-state', stateFile, '--policies', policiesDir, '--enable-plugins', 'PodNodeSelector'];

describe('tolerator audit --cluster-state FILE', () => {
  it('-o json: every rule, each pod with exactly its violations, in a deterministic order', async () => {
    const { code, stdout, stderr } = await audit([...fixtureFlags, '-o', 'json']);
    assert.equal(stderr, '');
    assert.equal(code, 1);
    const output = JSON.parse(stdout) as JsonOutput;
    assert.deepEqual(rulesByPod(output), withViolations(expectedRulesByPod()));
    for (const violation of output.violations) {
      assert.deepEqual(
        Object.keys(violation).filter((key) => key !== 'policy'),
        ['namespace', 'name', 'node', 'rule', 'message'],
      );
      assert.equal(typeof violation.message, 'string');
    }
    const order = output.violations.map((violation) => `${violation.namespace}/${violation.name}`);
    assert.deepEqual(order, [...order].sort());
    assert.equal(output.violations.find((violation) => violation.name === 'on-b')?.policy, 'dedicated-by-namespace-label');
    assert.equal(output.violations.find((violation) => violation.name === 'without-defaults')?.policy, undefined);
    assert.deepEqual(output.summary.skipped, { terminated: 2, mirror: 1, 'excluded-namespace': 2 });
    assert.equal(output.summary.audited, expectedRulesByPod().size);
    assert.equal(output.summary.byRule['foreign-node'], 3);
  });

  it('--all adds mirror pods and pods of excluded namespaces; terminated pods stay out', async () => {
    const { code, stdout } = await audit([...fixtureFlags, '-o', 'json', '--all']);
    assert.equal(code, 1);
    const output = JSON.parse(stdout) as JsonOutput;
    const expected = withViolations(expectedRulesByPod());
    for (const row of auditSkipRows) expected.set(podKey(row.pod), [...row.withAll].sort());
    assert.deepEqual(rulesByPod(output), expected);
    assert.deepEqual(output.summary.skipped, { terminated: 2, mirror: 0, 'excluded-namespace': 0 });
  });

  it('the table: NAMESPACE NAME NODE RULE MESSAGE, one row per violation, <none> for an unbound pod', async () => {
    const pod = storedPod({ namespace: 'shared', name: 'pending', tolerations: [] });
    const state = JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [...auditNamespaces, ...auditNodes, pod] });
    const { code, stdout } = await audit(['--cluster-state', stateFile], { [stateFile]: state });
    assert.equal(code, 1);
    const lines = stdout.split('\n');
    assert.match(lines[0] ?? '', /^NAMESPACE {3}NAME {6}NODE {5}RULE {26}MESSAGE$/);
    assert.match(
      lines[1] ?? '',
      /^shared {6}pending {3}<none> {3}missing-default-tolerations {3}lacks a toleration of node\.kubernetes\.io\/not-ready:NoExecute/,
    );
    assert.match(lines[2] ?? '', /^shared {6}pending {3}<none> {3}missing-memory-pressure {7}not BestEffort, yet lacks/);
    assert.equal(lines[4], '2 violations in 1 of 1 pods audited.');
  });

  it('the table and stderr escape control characters of a file: a name or node cannot move the cursor, recolour or add rows', async () => {
    // A cluster-state file is operator input, not validated by any API server: its names may hold
    // anything. An ESC (\x1b) would reach the terminal as an escape sequence, a newline a new row.
    const pod = storedPod({ namespace: 'shared', name: 'p\u001b[2Jx\ny\tz\u009b', node: 'gone\u001b]0;t\u0007', tolerations: [] });
    const undecided = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'q\u001b[31m', namespace: 'shared' }, spec: null };
    const state = JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [...auditNamespaces, ...auditNodes, pod, undecided] });
    const { code, stdout, stderr } = await audit(['--cluster-state', stateFile, '--policies', policiesDir], { [stateFile]: state });
    assert.equal(code, 2);
    // Nothing but the rows' own newlines is a control character.
    const control = (text: string): string[] => Array.from(text).filter((c) => c !== '\n' && (c < ' ' || (c >= '\u007f' && c <= '\u009f')));
    assert.deepEqual(control(stdout), []);
    assert.deepEqual(control(stderr), []);
    const rows = stdout.split('\n').filter((line) => line.startsWith('shared '));
    assert.ok(rows.length > 0);
    for (const row of rows) assert.match(row, /^shared {6}p\\x1b\[2Jx\\ny\\tz\\u009b {3}gone\\x1b\]0;t\\x07 /);
    assert.match(stderr, /could not judge pod "shared\/q\\x1b\[31m"/);
    // -o json is escaped by JSON itself and keeps the names as they are.
    const json = await audit(['--cluster-state', stateFile, '--policies', policiesDir, '-o', 'json'], { [stateFile]: state });
    assert.equal((JSON.parse(json.stdout) as JsonOutput).violations[0]?.name, 'p\u001b[2Jx\ny\tz\u009b');
  });

  it('the table does not say "No violations" when a pod could not be judged: it counts the undecided pods', async () => {
    const undecided = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'q', namespace: 'shared' }, spec: { tolerations: 'all' } };
    const state = JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [...auditNamespaces, ...auditNodes, undecided] });
    const { code, stdout } = await audit(['--cluster-state', stateFile], { [stateFile]: state });
    assert.equal(code, 2);
    assert.equal(stdout, 'No violations in 1 pods audited; 1 pods could not be judged (see stderr).\n');
    const pod = storedPod({ namespace: 'shared', name: 'pending', tolerations: [] });
    const both = JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [...auditNamespaces, ...auditNodes, pod, undecided] });
    const table = await audit(['--cluster-state', stateFile], { [stateFile]: both });
    assert.match(table.stdout, /\n2 violations in 1 of 2 pods audited; 1 pods could not be judged \(see stderr\)\.\n$/);
  });

  it('exit code 0 and one line when nothing is found', async () => {
    const pod = storedPod({
      namespace: 'shared',
      name: 'fine',
      node: 'plain',
      burstable: false,
      tolerations: [
        { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
        { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
      ],
    });
    const state = JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [...auditNamespaces, ...auditNodes, pod] });
    const table = await audit(['--cluster-state', stateFile, '--policies', policiesDir], { [stateFile]: state });
    assert.deepEqual(table, { code: 0, stdout: 'No violations in 1 pods audited.\n', stderr: '' });
    const json = await audit(['--cluster-state', stateFile, '-o', 'json'], { [stateFile]: state });
    assert.equal(json.code, 0);
    assert.deepEqual((JSON.parse(json.stdout) as JsonOutput).violations, []);
  });

  it('reads multi-document YAML too', async () => {
    const yaml = [...auditNamespaces, ...auditNodes, storedPod({ namespace: 'shared', name: 'on-b', node: 'node-b' })]
      .map((object) => JSON.stringify(object))
      .join('\n---\n');
    const { code, stdout } = await audit(['--cluster-state', '/virtual/state.yaml', '--policies', policiesDir, '-o', 'json'], {
      '/virtual/state.yaml': yaml,
    });
    assert.equal(code, 1);
    assert.deepEqual(
      (JSON.parse(stdout) as JsonOutput).violations.map((violation) => violation.rule),
      ['foreign-node', 'missing-default-tolerations', 'missing-memory-pressure'],
    );
  });

  const badInputs: { name: string; argv: string[]; files?: Record<string, string>; stderr: RegExp }[] = [
    { name: 'an unknown flag', argv: ['--cluster-state', stateFile, '--bogus'], stderr: /^tolerator audit: unknown flag: --bogus\n$/ },
    { name: 'a bad -o', argv: ['--cluster-state', stateFile, '-o', 'yaml'], stderr: /-o must be table or json, got "yaml"/ },
    { name: 'no source at all', argv: [], stderr: /no cluster: give --cluster-state FILE, --kubeconfig FILE/ },
    { name: 'both sources', argv: ['--cluster-state', stateFile, '--kubeconfig', '/x'], stderr: /not both/ },
    { name: 'a missing file', argv: ['--cluster-state', '/nonexistent/state.yaml'], stderr: /ENOENT/ },
    {
      name: 'a file without pods',
      argv: ['--cluster-state', stateFile],
      files: { [stateFile]: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: auditNamespaces }) },
      stderr: /no v1 Pod found/,
    },
    { name: 'malformed YAML', argv: ['--cluster-state', stateFile], files: { [stateFile]: 'kind: [' }, stderr: /document 1:/ },
    {
      name: 'a pod with a field of the wrong type',
      argv: ['--cluster-state', stateFile],
      files: {
        [stateFile]: JSON.stringify({
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name: 'p', namespace: 'shared' },
          spec: { tolerations: 'all' },
        }),
      },
      stderr: /could not judge pod "shared\/p": .*spec\.tolerations/,
    },
    {
      name: 'a pod whose namespace is not a string (not taken for default)',
      argv: ['--cluster-state', stateFile],
      files: { [stateFile]: JSON.stringify({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', namespace: 5 }, spec: {} }) },
      stderr: /^tolerator audit: \/virtual\/cluster-state\.json: document 1: Pod "p" has a metadata\.namespace that is not a string\n$/,
    },
    {
      name: 'a policy directory that does not load',
      argv: ['--cluster-state', stateFile, '--policies', '/nonexistent'],
      stderr: /--policies \/nonexistent/,
    },
    { name: 'a bad exclusion label', argv: ['--cluster-state', stateFile, '--excluded-namespace-label', 'novalue'], stderr: /KEY=VALUE/ },
  ];
  for (const row of badInputs) {
    it(`exit code 2 with a message and no stack trace: ${row.name}`, async () => {
      const result = await audit(row.argv, row.files);
      assert.equal(result.code, 2);
      assert.match(result.stderr, row.stderr);
      assert.doesNotMatch(result.stderr, /\n\s+at /);
    });
  }

  it("docs/audit.md's example is what the command prints for examples/audit-cluster.yaml", async () => {
    const readme = readFileSync(join(root, 'docs', 'audit.md'), 'utf8');
    const command = '$ npm run tolerator -- audit --cluster-state examples/audit-cluster.yaml --policies policies\n';
    const start = readme.indexOf(command);
    assert.ok(start !== -1, 'docs/audit.md shows the command');
    const shown = readme.slice(start + command.length, readme.indexOf('\n```', start) + 1);
    const { code, stdout } = await audit(['--cluster-state', join(root, 'examples', 'audit-cluster.yaml'), '--policies', policiesDir], {});
    assert.equal(code, 1);
    assert.equal(shown, stdout);
  });

  it("the default exclusions are the webhooks' namespaceSelector in deploy/base", () => {
    for (const file of ['mutating-webhook.yaml', 'validating-webhook.yaml']) {
      const manifest = parseAllDocuments(readFileSync(join(root, 'deploy', 'base', file), 'utf8'))[0]?.toJS() as {
        webhooks: { namespaceSelector: { matchExpressions: { key: string; operator: string; values: string[] }[] } }[];
      };
      for (const webhook of manifest.webhooks) {
        const expressions = webhook.namespaceSelector.matchExpressions;
        assert.deepEqual(expressions, [
          { key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: [...defaultExcludedNamespaces] },
          { key: defaultExcludedNamespaceLabel.split('=')[0], operator: 'NotIn', values: [defaultExcludedNamespaceLabel.split('=')[1]] },
        ]);
      }
    }
  });

  it('--excluded-namespaces and --excluded-namespace-label replace the defaults', async () => {
    const { stdout } = await audit([
      '--cluster-state',
      stateFile,
      '--policies',
      policiesDir,
      '-o',
      'json',
      '--excluded-namespaces',
      'opted-out',
      '--excluded-namespace-label',
      '',
    ]);
    const output = JSON.parse(stdout) as JsonOutput;
    assert.ok(output.violations.some((violation) => violation.namespace === 'kube-system'));
    assert.ok(!output.violations.some((violation) => violation.namespace === 'opted-out'));
  });
});
