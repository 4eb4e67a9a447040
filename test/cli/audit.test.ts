import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { defaultExcludedNamespaceLabel, defaultExcludedNamespaces, progressLine } from '../../src/cli/audit.js';
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
    // Then the summary: violations by rule, and by namespace with the pods that passed.
    assert.deepEqual(lines.slice(3), [
      '',
      'RULE                          VIOLATIONS',
      'missing-default-tolerations   1',
      'missing-memory-pressure       1',
      '',
      'NAMESPACE   VIOLATIONS   PODS PASSED',
      'shared      2            0',
      '',
      '2 violations in 1 of 1 pods audited.',
      '',
    ]);
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
    const rows = stdout.split('\n').filter((line) => line.startsWith('shared ') && line.includes('gone'));
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
    { name: 'an unknown flag', argv: ['--cluster-state', stateFile, '--bogus'], stderr: /^error: unknown option '--bogus'\n/ },
    {
      name: 'a bad -o',
      argv: ['--cluster-state', stateFile, '-o', 'xml'],
      stderr: /argument 'xml' is invalid\. Allowed choices are table, json, yaml/,
    },
    { name: 'no source at all', argv: [], stderr: /no cluster: give --cluster-state FILE or --kubeconfig FILE, set KUBECONFIG/ },
    {
      name: 'an unknown --rule',
      argv: ['--cluster-state', stateFile, '--rule', 'foreign-node,nope'],
      stderr: /--rule: no rule "nope"; the rules are unknown-node, foreign-node, /,
    },
    {
      name: 'a bad --group-by',
      argv: ['--cluster-state', stateFile, '--group-by', 'node'],
      stderr: /argument 'node' is invalid\. Allowed choices are pod, workload/,
    },
    {
      name: '-o yaml with --group-by workload',
      argv: ['--cluster-state', stateFile, '-o', 'yaml', '--group-by', 'workload'],
      stderr: /takes no --group-by/,
    },
    { name: '-n and -A together', argv: ['--cluster-state', stateFile, '-n', 'shared', '-A'], stderr: /not both/ },
    { name: 'both sources', argv: ['--cluster-state', stateFile, '--kubeconfig', '/x'], stderr: /not both/ },
    {
      name: 'a missing file',
      argv: ['--cluster-state', '/nonexistent/state.yaml'],
      stderr: /^tolerator audit: \/nonexistent\/state\.yaml: no such file or directory\n$/,
    },
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
    const command = '$ npx tolerator audit --cluster-state examples/audit-cluster.yaml --policies policies\n';
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
        webhooks: { namespaceSelector?: { matchExpressions: { key: string; operator: string; values: string[] }[] } }[];
      };
      // The NodePool and DeviceTaintRule webhooks review cluster-scoped resources: no namespaceSelector applies to it.
      for (const webhook of manifest.webhooks.filter((hook) => hook.namespaceSelector !== undefined)) {
        const expressions = webhook.namespaceSelector?.matchExpressions;
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

describe('tolerator audit: filters, summary, -o yaml and --group-by workload', () => {
  const pending = (namespace: string, name: string, ownerReferences?: unknown[]): unknown => ({
    ...storedPod({ namespace, name, tolerations: [] }),
    ...(ownerReferences === undefined ? {} : {}),
    metadata: {
      name,
      namespace,
      uid: `uid-${name}`,
      ...(ownerReferences === undefined ? {} : { ownerReferences }),
    },
  });
  const ref = (apiVersion: string, kind: string, name: string): unknown => ({
    apiVersion,
    kind,
    name,
    uid: `uid-${name}`,
    controller: true,
  });
  const fine = storedPod({
    namespace: 'shared',
    name: 'fine',
    node: 'plain',
    burstable: false,
    tolerations: [
      { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
      { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
    ],
  });
  const items = [
    ...auditNamespaces,
    ...auditNodes,
    fine,
    pending('shared', 'web-5f6c7-a', [ref('apps/v1', 'ReplicaSet', 'web-5f6c7')]),
    pending('shared', 'web-5f6c7-b', [ref('apps/v1', 'ReplicaSet', 'web-5f6c7')]),
    pending('shared', 'report-28-x', [ref('batch/v1', 'Job', 'report-28')]),
    pending('shared', 'db-0', [ref('apps/v1', 'StatefulSet', 'db')]),
    pending('shared', 'lonely'),
    pending('infra', 'tool'),
    // The owners, as `kubectl get rs,jobs -A -o yaml` adds them to the file.
    {
      apiVersion: 'apps/v1',
      kind: 'ReplicaSet',
      metadata: { name: 'web-5f6c7', namespace: 'shared', ownerReferences: [ref('apps/v1', 'Deployment', 'web')] },
    },
    {
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: { name: 'report-28', namespace: 'shared', ownerReferences: [ref('batch/v1', 'CronJob', 'report')] },
    },
  ];
  const files = { [stateFile]: JSON.stringify({ apiVersion: 'v1', kind: 'List', items }) };

  interface Output {
    violations?: { namespace: string; name: string; rule: string }[];
    workloads?: { namespace: string; kind: string; name: string; rule: string; pods: number; examplePod: string }[];
    summary: { byRule: Record<string, number>; byNamespace: { namespace: string; violations: number; passed: number }[] };
  }

  it('-o json: a summary by namespace with the violations and the pods that passed', async () => {
    const { code, stdout, stderr } = await audit(['--cluster-state', stateFile, '-o', 'json'], files);
    assert.match(stderr, /^tolerator audit: note: tenancy was not checked \(no --policies\)/);
    assert.equal(code, 1);
    const output = JSON.parse(stdout) as Output;
    assert.deepEqual(output.summary.byNamespace, [
      { namespace: 'infra', violations: 2, passed: 0 },
      { namespace: 'shared', violations: 10, passed: 1 },
    ]);
    assert.equal(output.summary.byRule['missing-default-tolerations'], 6);
    assert.equal(output.summary.byRule['missing-memory-pressure'], 6);
  });

  it('--rule keeps only the rules named; a pod breaking none of them passes', async () => {
    const { code, stdout } = await audit(['--cluster-state', stateFile, '-o', 'json', '--rule', 'missing-memory-pressure'], files);
    assert.equal(code, 1);
    const output = JSON.parse(stdout) as Output;
    assert.deepEqual([...new Set(output.violations?.map((violation) => violation.rule))], ['missing-memory-pressure']);
    assert.equal(output.violations?.length, 6);
    const none = await audit(['--cluster-state', stateFile, '-o', 'json', '--rule', 'foreign-node'], files);
    assert.equal(none.code, 0);
    assert.deepEqual((JSON.parse(none.stdout) as Output).summary.byNamespace, [
      { namespace: 'infra', violations: 0, passed: 1 },
      { namespace: 'shared', violations: 0, passed: 6 },
    ]);
  });

  for (const flag of [['-n', 'infra'], ['-ninfra'], ['--namespace', 'infra'], ['--namespace=infra']]) {
    it(`${flag.join(' ')} audits the pods of that namespace only`, async () => {
      const { code, stdout } = await audit(['--cluster-state', stateFile, '-o', 'json', ...flag], files);
      assert.equal(code, 1);
      const output = JSON.parse(stdout) as Output;
      assert.deepEqual([...new Set(output.violations?.map((violation) => `${violation.namespace}/${violation.name}`))], ['infra/tool']);
    });
  }

  it('-A is every namespace, the default', async () => {
    const all = await audit(['--cluster-state', stateFile, '-o', 'json', '-A'], files);
    const plain = await audit(['--cluster-state', stateFile, '-o', 'json'], files);
    assert.equal(all.stdout, plain.stdout);
  });

  it('--group-by workload: ReplicaSet to Deployment and Job to CronJob through the owners in the file, with the pod count', async () => {
    const { code, stdout } = await audit(
      ['--cluster-state', stateFile, '-o', 'json', '--group-by', 'workload', '--rule', 'missing-memory-pressure'],
      files,
    );
    assert.equal(code, 1);
    const output = JSON.parse(stdout) as Output;
    assert.equal(output.violations, undefined);
    assert.deepEqual(
      output.workloads?.map(({ namespace, kind, name, pods, examplePod }) => [namespace, kind, name, pods, examplePod]),
      [
        ['infra', 'Pod', 'tool', 1, 'tool'],
        ['shared', 'CronJob', 'report', 1, 'report-28-x'],
        ['shared', 'Deployment', 'web', 2, 'web-5f6c7-a'],
        ['shared', 'Pod', 'lonely', 1, 'lonely'],
        ['shared', 'StatefulSet', 'db', 1, 'db-0'],
      ],
    );
    const table = await audit(['--cluster-state', stateFile, '--group-by', 'workload', '--rule', 'missing-memory-pressure'], files);
    const lines = table.stdout.split('\n');
    assert.match(lines[0] ?? '', /^NAMESPACE {3}WORKLOAD {9}PODS {3}RULE {22}MESSAGE$/);
    assert.match(table.stdout, /\nshared {6}Deployment\/web {3}2 {6}missing-memory-pressure {3}not BestEffort.*\(pod web-5f6c7-a\)\n/);
    assert.match(table.stdout, /\n6 violations in 5 workloads, of 7 pods audited\.\n$/);
  });

  it('-o yaml: the PolicyReports the server writes, one per namespace with violations, pass counting the pods that broke no rule', async () => {
    const { code, stdout } = await audit(['--cluster-state', stateFile, '-o', 'yaml'], files);
    assert.equal(code, 1);
    const reports = parseAllDocuments(stdout).map((document) => document.toJS() as Record<string, unknown>);
    assert.deepEqual(
      reports.map((report) => [report.apiVersion, report.kind, (report.metadata as { namespace: string }).namespace, report.summary]),
      [
        ['wgpolicyk8s.io/v1alpha2', 'PolicyReport', 'infra', { pass: 0, fail: 2, warn: 0, error: 0, skip: 0 }],
        ['wgpolicyk8s.io/v1alpha2', 'PolicyReport', 'shared', { pass: 1, fail: 10, warn: 0, error: 0, skip: 0 }],
      ],
    );
    for (const report of reports) {
      assert.deepEqual(report.metadata, {
        name: 'tolerator-audit',
        namespace: (report.metadata as { namespace: string }).namespace,
        labels: { 'app.kubernetes.io/managed-by': 'tolerator', 'app.kubernetes.io/component': 'audit' },
      });
    }
    const clean = await audit(['--cluster-state', stateFile, '-o', 'yaml', '--rule', 'foreign-node'], files);
    assert.equal(clean.code, 0);
    assert.equal(clean.stdout, '# no violations in 7 pods audited: no PolicyReport\n');
  });
});

describe('the progress line of tolerator audit', () => {
  it('counts the pods read in place on a terminal, clears itself, and writes nothing to a pipe', () => {
    let written = '';
    const terminal = progressLine({ stderr: (text) => (written += text), stderrIsTerminal: true });
    terminal.page(500);
    terminal.page(500);
    terminal.clear();
    assert.equal(written, '\r\u001b[Ktolerator audit: 500 pods read…\r\u001b[Ktolerator audit: 1000 pods read…\r\u001b[K');
    written = '';
    const pipe = progressLine({ stderr: (text) => (written += text), stderrIsTerminal: false });
    pipe.page(500);
    pipe.clear();
    assert.equal(written, '');
  });
});

describe('tolerator audit --cluster-state FILE with Nodes and Karpenter NodePools', () => {
  const taint = { key: 'dedicated', value: 'pci', effect: 'NoSchedule' };
  const file = '/virtual/node-side.yaml';
  const text = [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'pci-apps', labels: { dedicated: 'pci' } } },
    { apiVersion: 'v1', kind: 'Node', metadata: { name: 'pci-1', labels: { dedicated: 'pci' } }, spec: {} },
    { apiVersion: 'v1', kind: 'Node', metadata: { name: 'pci-2', labels: { dedicated: 'pci' } }, spec: { taints: [taint] } },
    {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'app', namespace: 'pci-apps' },
      spec: { containers: [{ name: 'app', image: 'app:1' }] },
    },
    {
      apiVersion: 'v1',
      kind: 'List',
      items: [
        {
          apiVersion: 'karpenter.sh/v1',
          kind: 'NodePool',
          metadata: { name: 'pci-open' },
          spec: { template: { spec: { requirements: [{ key: 'dedicated', operator: 'In', values: ['pci'] }] } } },
        },
      ],
    },
  ]
    .map((document) => JSON.stringify(document))
    .join('\n---\n');
  const run = (...flags: string[]): Promise<{ code: number; stdout: string; stderr: string }> =>
    audit(['--cluster-state', file, '--policies', policiesDir, '--rule', 'node-pattern,nodepool-pattern', ...flags], { [file]: text });

  it('the audit reports each NodePool and Node that breaks the pattern by name (-o json)', async () => {
    const { code, stdout, stderr } = await run('-o', 'json');
    assert.equal(stderr, '');
    assert.equal(code, 1);
    const output = JSON.parse(stdout) as {
      violations: { namespace: string; kind?: string; name: string; rule: string; message: string }[];
    };
    assert.deepEqual(
      output.violations.map(({ namespace, kind, name, rule }) => ({ namespace, kind, name, rule })),
      [
        { namespace: '', kind: 'Node', name: 'pci-1', rule: 'node-pattern' },
        { namespace: '', kind: 'NodePool', name: 'pci-open', rule: 'nodepool-pattern' },
      ],
    );
    assert.match(
      output.violations[1]?.message ?? '',
      /^NodePool "pci-open" spec\.template\.spec\.requirements\[0\]: labels its nodes for group "pci"/,
    );
  });

  it('the table names them as node/NAME and nodepool/NAME under <cluster>', async () => {
    const { stdout } = await run();
    assert.match(stdout, /^<cluster>\s+node\/pci-1\s+pci-1\s+node-pattern\s+Node "pci-1"/m);
    assert.match(stdout, /^<cluster>\s+nodepool\/pci-open\s+<none>\s+nodepool-pattern\s+NodePool "pci-open"/m);
    assert.match(stdout, /2 violations in 0 of 1 pods audited and 2 Nodes, NodePools or RuntimeClasses\.$/m);
  });

  it('-o yaml: the findings go to a ClusterPolicyReport naming the Node and the NodePool', async () => {
    const { stdout } = await run('-o', 'yaml');
    const [report] = parseAllDocuments(stdout).map((document) => document.toJS() as Record<string, unknown>);
    assert.ok(report);
    assert.equal(report.kind, 'ClusterPolicyReport');
    assert.deepEqual((report.metadata as { namespace?: string }).namespace, undefined);
    const results = report.results as { resources: unknown[]; rule: string }[];
    assert.deepEqual(
      results.map((result) => result.resources[0]),
      [
        { apiVersion: 'v1', kind: 'Node', name: 'pci-1' },
        { apiVersion: 'karpenter.sh/v1', kind: 'NodePool', name: 'pci-open' },
      ],
    );
  });

  it('-n NAMESPACE audits one namespace of pods, not the cluster-scoped Nodes and NodePools', async () => {
    const { code } = await run('-n', 'pci-apps');
    assert.equal(code, 0);
  });
});

describe('audit without --policies says tenancy was not checked', () => {
  // A pod that tolerates every group's taint: the tenancy rules would find it, given the policies.
  const pod = storedPod({
    namespace: 'shared',
    name: 'everywhere',
    node: 'plain',
    burstable: false,
    tolerations: [
      { operator: 'Exists' },
      { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
      { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
    ],
  });
  const files = { [stateFile]: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [...auditNamespaces, ...auditNodes, pod] }) };
  const note =
    'tolerator audit: note: tenancy was not checked (no --policies): unknown-node, foreign-node, outside-group, missing-pair, foreign-toleration, node-pattern, nodepool-pattern, runtimeclass-pattern, foreign-device-toleration judge pods, Nodes, NodePools, RuntimeClasses and ResourceClaims only against TenancyPolicies. Give the directory of the policies the server runs with, --policies DIR (the files of the tolerator-policies ConfigMap; policies/ holds the shipped examples).\n';

  it('no --policies: "No violations" on stdout, and the note naming the unchecked rules and --policies on stderr', async () => {
    const result = await audit(['--cluster-state', stateFile], files);
    assert.deepEqual(result, { code: 0, stdout: 'No violations in 1 pods audited.\n', stderr: note });
  });

  it('with --policies the same pod is a violation and there is no note', async () => {
    const result = await audit(['--cluster-state', stateFile, '--policies', policiesDir, '-o', 'json'], files);
    assert.equal(result.code, 1);
    assert.equal(result.stderr, '');
    assert.ok((JSON.parse(result.stdout) as JsonOutput).violations.some((violation) => violation.rule === 'foreign-toleration'));
  });

  it('no note when no tenancy rule was asked for (--rule) or DedicatedNodes is disabled', async () => {
    const onlyDefaults = await audit(['--cluster-state', stateFile, '--rule', 'missing-memory-pressure'], files);
    assert.equal(onlyDefaults.stderr, '');
    const disabled = await audit(['--cluster-state', stateFile, '--disable-plugins', 'DedicatedNodes'], files);
    assert.equal(disabled.stderr, '');
  });
});
