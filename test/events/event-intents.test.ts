import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { JsonObject } from '../../src/api/types.js';
import type { AuditViolation } from '../../src/audit/audit-rules.js';
import {
  admissionController,
  admissionEventFor,
  auditController,
  auditEventFor,
  findingKey,
  noteMaxBytes,
} from '../../src/events/event-intents.js';
import { offlineAttributes } from '../../src/plugins/admission-request.js';
import type { AdmissionAttributes } from '../../src/plugins/plugin.js';

const template = { spec: { containers: [{ name: 'app', image: 'app:1' }] } };

function deployment(metadata: JsonObject = {}): JsonObject {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web', namespace: 'team-a', uid: 'd-uid', ...metadata },
    spec: { selector: {}, template },
  };
}

function attributesOf(object: JsonObject, extra: Partial<AdmissionAttributes> = {}): AdmissionAttributes {
  return { ...offlineAttributes({ operation: 'CREATE', namespace: 'team-a', object }), ...extra };
}

const denied = { allowed: false, message: 'deployments.apps "web" is forbidden: tolerates the taint of group b' };

describe('which denials become an Event', () => {
  it('a denied Deployment: an Event regarding it as the review names it, Warning PolicyViolation, the denial as its note', () => {
    assert.deepEqual(admissionEventFor(attributesOf(deployment()), denied), {
      regarding: { apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'team-a', name: 'web', uid: 'd-uid' },
      type: 'Warning',
      reason: 'PolicyViolation',
      action: 'Denied',
      note: denied.message,
      reportingController: admissionController,
    });
  });

  it('every workload template kind gets one: ReplicaSet, StatefulSet, DaemonSet, Job, CronJob, ReplicationController, PodTemplate', () => {
    const kinds = [
      ['apps/v1', 'ReplicaSet'],
      ['apps/v1', 'StatefulSet'],
      ['apps/v1', 'DaemonSet'],
      ['batch/v1', 'Job'],
      ['batch/v1', 'CronJob'],
      ['v1', 'ReplicationController'],
      ['v1', 'PodTemplate'],
    ];
    for (const [apiVersion, kind] of kinds) {
      const event = admissionEventFor(attributesOf({ apiVersion, kind, metadata: { name: 'w' } }), denied);
      assert.deepEqual(event?.regarding, { apiVersion, kind, namespace: 'team-a', name: 'w' }, `${kind}`);
    }
  });

  it('a pod its ReplicaSet creates (the FailedCreate case): an Event regarding the ReplicaSet, naming the kind denied, not the generated name', () => {
    const pod: JsonObject = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: 'web-5d9c-x7k2p',
        generateName: 'web-5d9c-',
        ownerReferences: [
          { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web-5d9c', uid: 'rs-uid', controller: true, blockOwnerDeletion: true },
        ],
      },
      spec: template.spec,
    };
    const event = admissionEventFor(attributesOf(pod), { allowed: false, message: 'pods "web-5d9c-x7k2p" is forbidden: no' });
    assert.deepEqual(event?.regarding, { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web-5d9c', uid: 'rs-uid', namespace: 'team-a' });
    assert.equal(event.note, 'a Pod created by this ReplicaSet was denied: pods "web-5d9c-x7k2p" is forbidden: no');
  });

  it('a Job its CronJob creates: an Event regarding the CronJob', () => {
    const job: JsonObject = {
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: {
        name: 'nightly-29000000',
        ownerReferences: [{ apiVersion: 'batch/v1', kind: 'CronJob', name: 'nightly', uid: 'cj', controller: true }],
      },
      spec: { template },
    };
    assert.equal(admissionEventFor(attributesOf(job), denied)?.regarding.kind, 'CronJob');
  });

  it('a bare pod (no controller) gets none: its creator holds the denial', () => {
    const pod: JsonObject = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' }, spec: template.spec };
    assert.equal(admissionEventFor(attributesOf(pod), denied), undefined);
    const owned = { ...pod, metadata: { name: 'p', ownerReferences: [{ apiVersion: 'v1', kind: 'Thing', name: 't', uid: 'u' }] } };
    assert.equal(admissionEventFor(attributesOf(owned), denied), undefined, 'an owner that is not its controller');
  });

  it('a dry run writes no Event: dryRun requests have no side effects', () => {
    assert.equal(admissionEventFor(attributesOf(deployment(), { dryRun: true }), denied), undefined);
  });

  it('an allowed review, a subresource and a kind tolerator does not read get none', () => {
    assert.equal(admissionEventFor(attributesOf(deployment()), { allowed: true, message: undefined }), undefined);
    assert.equal(admissionEventFor(attributesOf(deployment(), { subResource: 'status' }), denied), undefined);
    const claim = { apiVersion: 'resource.k8s.io/v1', kind: 'ResourceClaim', metadata: { name: 'c' } };
    assert.equal(admissionEventFor(attributesOf(claim as JsonObject), denied), undefined);
  });

  it('names that are not DNS-1123 subdomains are not written (the API server validates them after the mutating webhooks)', () => {
    const long = 'a'.repeat(300);
    assert.equal(admissionEventFor(attributesOf(deployment({ name: long }), { name: long }), denied), undefined);
    assert.equal(admissionEventFor(attributesOf(deployment({ name: 'Web' }), { name: 'Web' }), denied), undefined);
  });

  it("the note is bounded at 1,024 bytes (the API server's NoteLengthLimit), however long the denial", () => {
    const event = admissionEventFor(attributesOf(deployment()), { allowed: false, message: 'é'.repeat(100_000) });
    assert.ok(event !== undefined);
    assert.ok(Buffer.byteLength(event.note) <= noteMaxBytes, `${Buffer.byteLength(event.note)} bytes`);
    assert.match(event.note, /more characters\)$/);
  });
});

describe("the audit's Events", () => {
  const violation: AuditViolation = {
    namespace: 'team-a',
    name: 'web-1',
    node: 'n1',
    rule: 'foreign-toleration',
    message: 'tolerates the taint of group b',
    policy: 'p',
  };

  it('one finding: an Event regarding the pod, its rule as the action (two rules broken are two Events, not a series), the rule and message as its note', () => {
    assert.deepEqual(auditEventFor(violation), {
      regarding: { apiVersion: 'v1', kind: 'Pod', namespace: 'team-a', name: 'web-1' },
      type: 'Warning',
      reason: 'PolicyViolation',
      action: 'foreign-toleration',
      note: 'foreign-toleration: tolerates the taint of group b',
      reportingController: auditController,
    });
  });

  it('a Node or NodePool finding regards the cluster-scoped object', () => {
    assert.deepEqual(auditEventFor({ ...violation, namespace: '', kind: 'Node', name: 'gpu-1' })?.regarding, {
      apiVersion: 'v1',
      kind: 'Node',
      name: 'gpu-1',
    });
    assert.deepEqual(auditEventFor({ ...violation, namespace: '', kind: 'NodePool', name: 'gpu' })?.regarding, {
      apiVersion: 'karpenter.sh/v1',
      kind: 'NodePool',
      name: 'gpu',
    });
  });

  it('a ResourceClaim finding of the periodic audit (foreign-device-toleration) regards the ResourceClaim, not a Pod of its name', () => {
    assert.deepEqual(
      auditEventFor({ ...violation, kind: 'ResourceClaim', name: 'stolen', node: '', rule: 'foreign-device-toleration' })?.regarding,
      { apiVersion: 'resource.k8s.io/v1', kind: 'ResourceClaim', namespace: 'team-a', name: 'stolen' },
    );
    assert.deepEqual(auditEventFor({ ...violation, namespace: '', kind: 'RuntimeClass', name: 'gvisor' })?.regarding, {
      apiVersion: 'node.k8s.io/v1',
      kind: 'RuntimeClass',
      name: 'gvisor',
    });
  });

  it("a finding's key leaves its message out: the same finding with new words is the same finding", () => {
    assert.equal(findingKey(violation), findingKey({ ...violation, message: 'other words' }));
    assert.notEqual(findingKey(violation), findingKey({ ...violation, name: 'web-2' }));
  });
});
