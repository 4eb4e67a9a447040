import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { objectAt, podFromTemplate, podTemplateOf, templatePathOf, valueAt, withPodSpec } from '../../src/api/pod-template.js';
import { resourceKindOf, workloadOfController, type ResourceKind } from '../../src/api/resource-kinds.js';
import type { JsonObject } from '../../src/api/types.js';

function kind(apiVersion: string, name: string): ResourceKind {
  const found = resourceKindOf(apiVersion, name);
  assert.ok(found, `${apiVersion} ${name}`);
  return found;
}

const spec = { containers: [{ name: 'app', image: 'app:1' }], tolerations: [{ key: 'k', operator: 'Exists' }] };
const templateMetadata = {
  name: 'written-in-template',
  namespace: 'elsewhere',
  labels: { app: 'web' },
  annotations: { note: 'kept' },
  finalizers: ['example.com/keep'],
  ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'forged', uid: 'x', controller: true }],
};

function deployment(name = 'web'): JsonObject {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace: 'shop', uid: 'd-1' },
    spec: { template: { metadata: templateMetadata, spec } },
  };
}

describe('podFromTemplate: the pod a controller creates from a template (GetPodFromTemplate)', () => {
  it("copies only the template's labels, annotations and finalizers, and sets generateName, namespace and the controller's reference", () => {
    const pod = podFromTemplate(deployment(), kind('apps/v1', 'Deployment'), 'shop');
    assert.deepEqual(pod, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        labels: { app: 'web' },
        annotations: { note: 'kept' },
        finalizers: ['example.com/keep'],
        generateName: 'web-',
        namespace: 'shop',
        ownerReferences: [
          { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web', uid: 'd-1', controller: true, blockOwnerDeletion: true },
        ],
      },
      spec,
    });
  });

  const owners: { apiVersion: string; kind: string; owner: string | undefined }[] = [
    { apiVersion: 'apps/v1', kind: 'ReplicaSet', owner: 'ReplicaSet' },
    { apiVersion: 'apps/v1', kind: 'StatefulSet', owner: 'StatefulSet' },
    { apiVersion: 'apps/v1', kind: 'DaemonSet', owner: 'DaemonSet' },
    { apiVersion: 'batch/v1', kind: 'Job', owner: 'Job' },
    { apiVersion: 'v1', kind: 'ReplicationController', owner: 'ReplicationController' },
    { apiVersion: 'v1', kind: 'PodTemplate', owner: undefined },
  ];
  for (const row of owners) {
    it(`a ${row.kind}'s pod is owned by ${row.owner ?? 'nothing'}`, () => {
      const resourceKind = kind(row.apiVersion, row.kind);
      const object = {
        apiVersion: row.apiVersion,
        kind: row.kind,
        metadata: { name: 'w' },
        template: { spec },
        spec: { template: { spec } },
      };
      const pod = podFromTemplate(object, resourceKind, 'ns');
      const references = objectAt(pod, ['metadata'])?.ownerReferences as { kind: string }[] | undefined;
      assert.equal(references?.[0]?.kind, row.owner);
    });
  }

  it("finds a CronJob's template under spec.jobTemplate.spec.template, owned by a Job", () => {
    const cronJob = {
      apiVersion: 'batch/v1',
      kind: 'CronJob',
      metadata: { name: 'nightly' },
      spec: { jobTemplate: { spec: { template: { spec } } } },
    };
    const pod = podFromTemplate(cronJob, kind('batch/v1', 'CronJob'), 'ops');
    assert.equal(pod?.spec, spec);
    assert.deepEqual(objectAt(pod, ['metadata'])?.ownerReferences, [
      { apiVersion: 'batch/v1', kind: 'Job', name: 'nightly', uid: '', controller: true, blockOwnerDeletion: true },
    ]);
  });

  it('keeps the dash of generateName only while the prefix fits a 253-character pod name (getPodsPrefix)', () => {
    const fits = 'a'.repeat(252);
    const tooLong = 'a'.repeat(253);
    assert.equal(objectAt(podFromTemplate(deployment(fits), kind('apps/v1', 'Deployment'), 'ns'), ['metadata'])?.generateName, `${fits}-`);
    assert.equal(objectAt(podFromTemplate(deployment(tooLong), kind('apps/v1', 'Deployment'), 'ns'), ['metadata'])?.generateName, tooLong);
  });

  it('returns a Pod as it is, only filling in a missing namespace', () => {
    const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', namespace: 'a' }, spec };
    assert.equal(podFromTemplate(pod, kind('v1', 'Pod'), 'b'), pod);
    assert.deepEqual(podFromTemplate({ ...pod, metadata: { name: 'p' } }, kind('v1', 'Pod'), 'b')?.metadata, { name: 'p', namespace: 'b' });
  });

  it('is undefined for a workload without a pod template spec', () => {
    assert.equal(
      podFromTemplate({ kind: 'Deployment', spec: { template: { metadata: {} } } }, kind('apps/v1', 'Deployment'), 'ns'),
      undefined,
    );
    assert.equal(podFromTemplate({ kind: 'Deployment', spec: { template: [] } }, kind('apps/v1', 'Deployment'), 'ns'), undefined);
  });
});

describe('the pod spec at a kind’s path', () => {
  it('reads own properties only: a tenant key named after a prototype member finds nothing', () => {
    assert.equal(valueAt({}, ['constructor']), undefined);
    assert.equal(valueAt(JSON.parse('{"__proto__": {"spec": 1}}') as unknown, ['__proto__', 'spec']), 1);
    assert.equal(valueAt({ spec: 'x' }, ['spec', 'length']), undefined);
  });

  it('names the template path of every kind', () => {
    assert.deepEqual(templatePathOf(kind('v1', 'Pod')), []);
    assert.deepEqual(templatePathOf(kind('v1', 'PodTemplate')), ['template']);
    assert.deepEqual(templatePathOf(kind('apps/v1', 'DaemonSet')), ['spec', 'template']);
    assert.deepEqual(templatePathOf(kind('batch/v1', 'CronJob')), ['spec', 'jobTemplate', 'spec', 'template']);
  });

  it('replaces the pod spec, copying only the objects on its path', () => {
    const object = deployment();
    const deploymentKind = kind('apps/v1', 'Deployment');
    const replaced = withPodSpec(object, deploymentKind, { containers: [] });
    assert.deepEqual(podTemplateOf(replaced, deploymentKind)?.spec, { containers: [] });
    assert.equal(objectAt(replaced, ['metadata']), object.metadata);
    assert.equal(podTemplateOf(replaced, deploymentKind)?.metadata, templateMetadata);
    assert.equal(podTemplateOf(object, deploymentKind)?.spec, spec);
  });
});

describe('the workload a person writes, from the controller that owns the pods', () => {
  it('is the Deployment for a ReplicaSet and the CronJob for a Job, and nothing else', () => {
    assert.deepEqual(
      [...workloadOfController],
      [
        ['ReplicaSet', 'Deployment'],
        ['Job', 'CronJob'],
      ],
    );
  });
});
