import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { AuditViolation } from '../../src/audit/audit-rules.js';
import { controllerOf, groupByWorkload, workloadOf, type WorkloadRef } from '../../src/audit/workloads.js';

const owner = (kind: string, name: string, controller = true): Record<string, unknown> => ({
  apiVersion: kind === 'Job' || kind === 'CronJob' ? 'batch/v1' : 'apps/v1',
  kind,
  name,
  uid: `uid-${name}`,
  controller,
});

describe('controllerOf', () => {
  it('is the one ownerReference with controller: true, as metav1.GetControllerOf reads it', () => {
    assert.deepEqual(controllerOf({ ownerReferences: [owner('ConfigMap', 'x', false), owner('ReplicaSet', 'web-5f6c7')] as never }), {
      kind: 'ReplicaSet',
      name: 'web-5f6c7',
    });
    assert.equal(controllerOf({ ownerReferences: [owner('ReplicaSet', 'web-5f6c7', false)] as never }), undefined);
    assert.equal(controllerOf({}), undefined);
    assert.equal(controllerOf(undefined), undefined);
  });

  it('ignores entries of the wrong shape, as a file may hold them', () => {
    assert.equal(controllerOf({ ownerReferences: [null, 7, { controller: true, kind: 3, name: 'x' }] as never }), undefined);
    assert.equal(controllerOf({ ownerReferences: 'all' as never }), undefined);
  });
});

describe('workloadOf', () => {
  const parents = new Map<string, WorkloadRef | undefined>([
    ['shop/ReplicaSet/web-5f6c7', { kind: 'Deployment', name: 'web' }],
    ['shop/Job/report-2891', { kind: 'CronJob', name: 'report' }],
    ['shop/ReplicaSet/orphan-1', undefined],
    ['shop/ReplicaSet/odd-1', { kind: 'Rollout', name: 'odd' }],
  ]);
  const reads: string[] = [];
  const read = (namespace: string, ref: WorkloadRef): Promise<WorkloadRef | undefined> => {
    reads.push(`${namespace}/${ref.kind}/${ref.name}`);
    return Promise.resolve(parents.get(`${namespace}/${ref.kind}/${ref.name}`));
  };

  it('follows a ReplicaSet to its Deployment and a Job to its CronJob', async () => {
    assert.deepEqual(await workloadOf('shop', 'web-5f6c7-abcde', { kind: 'ReplicaSet', name: 'web-5f6c7' }, read), {
      kind: 'Deployment',
      name: 'web',
    });
    assert.deepEqual(await workloadOf('shop', 'report-2891-x', { kind: 'Job', name: 'report-2891' }, read), {
      kind: 'CronJob',
      name: 'report',
    });
  });

  it('stops at a ReplicaSet without a Deployment (or owned by another kind), and reads nothing for the other kinds', async () => {
    assert.deepEqual(await workloadOf('shop', 'p', { kind: 'ReplicaSet', name: 'orphan-1' }, read), {
      kind: 'ReplicaSet',
      name: 'orphan-1',
    });
    assert.deepEqual(await workloadOf('shop', 'p', { kind: 'ReplicaSet', name: 'odd-1' }, read), { kind: 'ReplicaSet', name: 'odd-1' });
    reads.length = 0;
    for (const kind of ['StatefulSet', 'DaemonSet', 'ReplicationController', 'Node']) {
      assert.deepEqual(await workloadOf('shop', 'p', { kind, name: 'x' }, read), { kind, name: 'x' });
    }
    assert.deepEqual(reads, []);
  });

  it('a pod without a controller is its own workload', async () => {
    assert.deepEqual(await workloadOf('shop', 'lonely', undefined, read), { kind: 'Pod', name: 'lonely' });
  });
});

describe('groupByWorkload', () => {
  const violation = (name: string, rule: AuditViolation['rule'], policy?: string): AuditViolation => ({
    namespace: 'shop',
    name,
    node: 'n1',
    rule,
    message: `message of ${name}`,
    ...(policy === undefined ? {} : { policy }),
  });

  it('one row per workload, rule and policy, with the number of its pods and the first pod as the example', () => {
    const pods = new Map<string, WorkloadRef>([
      ['shop/web-1', { kind: 'Deployment', name: 'web' }],
      ['shop/web-2', { kind: 'Deployment', name: 'web' }],
      ['shop/web-3', { kind: 'Deployment', name: 'web' }],
      ['shop/db-0', { kind: 'StatefulSet', name: 'db' }],
    ]);
    const rows = groupByWorkload(
      [
        violation('db-0', 'missing-memory-pressure'),
        violation('lonely', 'foreign-node', 'p'),
        violation('web-1', 'missing-memory-pressure'),
        violation('web-1', 'foreign-toleration', 'p'),
        violation('web-2', 'missing-memory-pressure'),
        violation('web-3', 'missing-memory-pressure'),
      ],
      pods,
    );
    assert.deepEqual(
      rows.map((row) => [row.kind, row.name, row.rule, row.policy, row.pods, row.examplePod]),
      [
        ['Deployment', 'web', 'missing-memory-pressure', undefined, 3, 'web-1'],
        ['Deployment', 'web', 'foreign-toleration', 'p', 1, 'web-1'],
        ['Pod', 'lonely', 'foreign-node', 'p', 1, 'lonely'],
        ['StatefulSet', 'db', 'missing-memory-pressure', undefined, 1, 'db-0'],
      ],
    );
    assert.equal(rows[0]?.message, 'message of web-1');
  });

  it('counts each pod of a workload once, and keeps one row per workload, at n and at 4n findings', () => {
    const build = (n: number): { rows: number; pods: number } => {
      const pods = new Map<string, WorkloadRef>();
      const violations: AuditViolation[] = [];
      for (let i = 0; i < n; i++) {
        const name = `p-${String(i).padStart(6, '0')}`;
        pods.set(`shop/${name}`, { kind: 'Deployment', name: `d-${i % 10}` });
        violations.push(violation(name, 'missing-memory-pressure'));
      }
      const rows = groupByWorkload(violations, pods);
      return { rows: rows.length, pods: rows.reduce((sum, row) => sum + row.pods, 0) };
    };
    assert.deepEqual(build(1_000), { rows: 10, pods: 1_000 });
    assert.deepEqual(build(4_000), { rows: 10, pods: 4_000 });
  });
});
