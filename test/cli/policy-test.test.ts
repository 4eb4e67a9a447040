import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync, copyFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { applyJsonPatch } from '../../src/admission/json-patch-apply.js';
import { lineDiff, testCommand } from '../../src/cli/policy-test.js';
import { runCommand, type CommandResult } from '../support/command-io.js';

const root = join(import.meta.dirname, '..', '..');

function runTests(argv: readonly string[]): Promise<CommandResult> {
  return runCommand(testCommand, argv);
}

/** A temporary test directory holding the shipped cluster state and the given case file. */
function caseDir(cases: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'tolerator-test-'));
  copyFileSync(join(root, 'policies', 'tests', 'cluster.yaml'), join(dir, 'cluster.yaml'));
  writeFileSync(join(dir, 'cases.test.yaml'), cases.replaceAll('POLICIES', join(root, 'policies')));
  return dir;
}

const tenantPod = `
policies: POLICIES
clusterState: cluster.yaml
resource:
  apiVersion: v1
  kind: Pod
  metadata: { name: trainer, namespace: ml }
  spec: { containers: [{ name: app, image: x }] }
`;

describe('tolerator test', () => {
  it('the shipped policies/tests pass: exit 0 and every case PASS', async () => {
    const { code, stdout } = await runTests([join(root, 'policies', 'tests')]);
    assert.equal(code, 0, stdout);
    assert.match(stdout, /\n18 passed, 0 failed, 18 cases\n$/);
  });

  it("says on stderr when a policy lets tenants decide for themselves (reads the pod's own labels)", async () => {
    const dir = caseDir(`name: tenant pod
policies: policies
clusterState: cluster.yaml
resource:
  apiVersion: v1
  kind: Pod
  metadata: { name: trainer, namespace: ml }
  spec: { containers: [{ name: app, image: x }] }
expect:
  allowed: true
`);
    mkdirSync(join(dir, 'policies'));
    writeFileSync(
      join(dir, 'policies', 'p.yaml'),
      readFileSync(join(root, 'policies', 'dedicated-by-namespace-label.yaml'), 'utf8').replace(
        /exempt: .*/,
        `exempt: "object.metadata.?labels['exempt'].orValue('') == 'true'"`,
      ),
    );
    try {
      const { code, stderr } = await runTests([dir]);
      assert.equal(code, 0);
      assert.match(
        stderr,
        /^tolerator test: caution: --policies .*: TenancyPolicy "dedicated-by-namespace-label" spec\.exempt reads object\.metadata\.labels, /m,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a wrong patched expectation fails with exit 1 and a line diff naming the differing field', async () => {
    const dir = caseDir(`name: wrong group
${tenantPod}
expect:
  allowed: true
  patched:
    apiVersion: v1
    kind: Pod
    metadata: { name: trainer, namespace: ml }
    spec:
      containers: [{ name: app, image: x }]
      tolerations:
        - { key: node.kubernetes.io/not-ready, operator: Exists, effect: NoExecute, tolerationSeconds: 300 }
        - { key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute, tolerationSeconds: 300 }
        - { key: dedicated, operator: Equal, value: pci, effect: NoSchedule }
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
              - matchExpressions: [{ key: dedicated, operator: In, values: [gpu] }]
`);
    try {
      const { code, stdout } = await runTests([dir]);
      assert.equal(code, 1);
      assert.match(stdout, /^FAIL wrong group \(/);
      assert.match(stdout, /the resource after the patch differs \(- expected, \+ actual\):\n/);
      assert.match(stdout, /\n {6}- {7}value: pci\n {6}\+ {7}value: gpu\n/);
      assert.match(stdout, /\n0 passed, 1 failed, 1 cases\n$/);
    } finally {
      rmSync(dir, { recursive: true });
    }
  });

  it('a case expecting allowed for a denied pod fails and shows the denial', async () => {
    const dir = caseDir(`name: expects the skipped mutation to pass
webhook: validate
${tenantPod}
expect: { allowed: true }
`);
    try {
      const { code, stdout } = await runTests([dir]);
      assert.equal(code, 1);
      assert.match(stdout, /expected allowed, got denied: pods in namespace "ml" \(group "gpu"/);
    } finally {
      rmSync(dir, { recursive: true });
    }
  });

  const usageRows: { name: string; cases?: string; argv?: string[]; want: number }[] = [
    { name: 'no directory: 2', argv: [], want: 2 },
    { name: 'a directory without test files: 2', argv: [join(root, 'examples')], want: 2 },
    { name: 'a case with an unknown field: 2', cases: 'name: x\nresorce: {}\nexpect: { allowed: true }\n', want: 2 },
    {
      name: 'a case without expect.allowed: 2',
      cases: 'name: x\nresource: { apiVersion: v1, kind: Pod, metadata: { name: p } }\nexpect: {}\n',
      want: 2,
    },
  ];
  for (const row of usageRows) {
    it(row.name, async () => {
      const dir = row.cases === undefined ? undefined : caseDir(row.cases);
      try {
        const { code } = await runTests(row.argv ?? [dir ?? '']);
        assert.equal(code, row.want);
      } finally {
        if (dir !== undefined) rmSync(dir, { recursive: true });
      }
    });
  }
});

describe('applyJsonPatch and lineDiff', () => {
  it('applies add, replace and remove with escaped keys to a copy', () => {
    const original = { metadata: { annotations: { 'a/b': '1' } }, spec: { tolerations: [{ key: 'x' }] } };
    const patched = applyJsonPatch(original, [
      { op: 'add', path: '/spec/tolerations/1', value: { key: 'y' } },
      { op: 'replace', path: '/metadata/annotations/a~1b', value: '2' },
      { op: 'remove', path: '/spec/tolerations/0' },
    ]);
    assert.deepEqual(patched, { metadata: { annotations: { 'a/b': '2' } }, spec: { tolerations: [{ key: 'y' }] } });
    assert.deepEqual(original.spec.tolerations, [{ key: 'x' }]);
  });

  it('shows removed lines before added ones, with context and elisions', () => {
    const expected = ['a', 'b', 'c', 'd', 'e', 'f', 'g'].join('\n');
    const actual = ['a', 'b', 'c', 'D', 'e', 'f', 'g'].join('\n');
    assert.equal(lineDiff(expected, actual), ['  ...', '    b', '    c', '  - d', '  + D', '    e', '    f', '  ...'].join('\n'));
  });
});
