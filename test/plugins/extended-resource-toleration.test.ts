import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Container, Pod, Toleration } from '../../src/api/types.js';
import {
  addExtendedResourceTolerations,
  createExtendedResourceToleration,
  isExtendedResourceName,
  requestedExtendedResources,
} from '../../src/plugins/extended-resource-toleration.js';
import type { Operation } from '../../src/plugins/plugin.js';
import { emptyClusterFacts } from '../../src/admission/cluster-facts.js';
import { createPipeline } from '../../src/admission/pipeline.js';
import { defaultFeatureGates } from '../../src/api/feature-gates.js';
import { pluginContext, podAttributes } from '../support/plugin-inputs.js';

const context = pluginContext();
const plugin = createExtendedResourceToleration();

const device1 = 'example.com/device-ek';
const device2 = 'example.com/device-do';
const tolerationFor = (key: string): Toleration => ({ key, operator: 'Exists', effect: 'NoSchedule' });

function requesting(requests: Record<string, string>, limits?: Record<string, string>): Container {
  return { name: 'c', resources: { requests, ...(limits === undefined ? {} : { limits }) } };
}

function pod(spec: Pod['spec']): Pod {
  return { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', namespace: 'default' }, spec };
}

function admitted(given: Pod, operation: Operation = 'CREATE', subResource = ''): Pod {
  const outcome = plugin.admit(given, podAttributes(operation, given, { subResource }), context);
  assert.equal(outcome.denial, undefined);
  return outcome.object;
}

describe('ExtendedResourceToleration', () => {
  // Ported from plugin/pkg/admission/extendedresourcetoleration/admission_test.go (TestAdmit), v1.37.2.
  const cpu = requesting({ cpu: '2' });
  const memory = requesting({ memory: '2048' });
  const extended1 = requesting({ [device1]: '1' });
  const extended2 = requesting({ [device2]: '2' });
  const rows: { name: string; spec: Pod['spec']; want: Toleration[] | undefined }[] = [
    { name: 'an empty pod gets nothing', spec: {}, want: undefined },
    { name: 'a container without extended resources gets nothing', spec: { containers: [cpu, memory] }, want: undefined },
    { name: 'an init container without extended resources gets nothing', spec: { initContainers: [cpu, memory] }, want: undefined },
    { name: "a container's extended resource gets its toleration", spec: { containers: [cpu, extended1] }, want: [tolerationFor(device1)] },
    {
      name: "an init container's extended resource gets its toleration",
      spec: { initContainers: [extended2] },
      want: [tolerationFor(device2)],
    },
    {
      name: 'existing tolerations are kept, the new one appended',
      spec: { containers: [extended1], tolerations: [{ key: 'foo', operator: 'Equal', value: 'bar', effect: 'NoSchedule' }] },
      want: [{ key: 'foo', operator: 'Equal', value: 'bar', effect: 'NoSchedule' }, tolerationFor(device1)],
    },
    {
      name: 'several extended resources get their tolerations sorted by name, containers and init containers together',
      spec: { containers: [memory, extended1], initContainers: [cpu, extended2] },
      want: [tolerationFor(device2), tolerationFor(device1)],
    },
    {
      name: 'the same toleration already there: nothing added',
      spec: { containers: [extended1], tolerations: [tolerationFor(device1)] },
      want: [tolerationFor(device1)],
    },
    {
      name: 'the same key with another operator, value and effect does not count',
      spec: { containers: [extended1], tolerations: [{ key: device1, operator: 'Equal', value: 'foo', effect: 'NoExecute' }] },
      want: [{ key: device1, operator: 'Equal', value: 'foo', effect: 'NoExecute' }, tolerationFor(device1)],
    },
    {
      name: 'a wildcard toleration (empty key, Exists) does not count either',
      spec: { containers: [extended1], tolerations: [{ operator: 'Exists' }] },
      want: [{ operator: 'Exists' }, tolerationFor(device1)],
    },
  ];
  for (const row of rows) {
    it(row.name, () => {
      assert.deepEqual(admitted(pod(row.spec)).spec?.tolerations, row.want);
    });
  }

  it('the pod is returned itself when nothing changes: no copy, no patch', () => {
    const given = pod({ containers: [extended1], tolerations: [tolerationFor(device1)] });
    assert.equal(admitted(given), given);
    const none = pod({ containers: [cpu] });
    assert.equal(admitted(none), none);
  });

  it('merge: an equal-key toleration (same operator, value, effect) is replaced in place, its tolerationSeconds dropped, every copy of it', () => {
    // AddOrUpdateTolerationInPod's Semantic.DeepEqual compares *Toleration with Toleration: never
    // equal, so every MatchToleration entry is overwritten, none removed, nothing appended.
    const withSeconds = { ...tolerationFor(device1), tolerationSeconds: 5 };
    const other = { key: 'a', operator: 'Exists' };
    const result = admitted(pod({ containers: [extended1], tolerations: [withSeconds, other, tolerationFor(device1), withSeconds] }));
    assert.deepEqual(result.spec?.tolerations, [tolerationFor(device1), other, tolerationFor(device1), tolerationFor(device1)]);
  });

  it('merge: an explicit empty value matches, and an empty operator (Equal) does not', () => {
    const explicit = { key: device1, operator: 'Exists', value: '', effect: 'NoSchedule' };
    const equal = { key: device1, operator: '', effect: 'NoSchedule' };
    const given = pod({ containers: [extended1], tolerations: [explicit] });
    assert.equal(admitted(given), given);
    assert.deepEqual(admitted(pod({ containers: [extended1], tolerations: [equal] })).spec?.tolerations, [equal, tolerationFor(device1)]);
  });

  it('limits alone count: the API server defaults requests from limits before admission, and offline nothing did', () => {
    const limitsOnly: Container = { name: 'c', resources: { limits: { [device1]: '1' } } };
    assert.deepEqual(admitted(pod({ containers: [limitsOnly] })).spec?.tolerations, [tolerationFor(device1)]);
  });

  it('ephemeral containers and the pod-level resources are not read', () => {
    const given = pod({ ephemeralContainers: [extended1], resources: { requests: { [device2]: '1' }, limits: { [device2]: '1' } } });
    assert.equal(admitted(given), given);
  });

  it('UPDATE adds the toleration too (upstream handles Create and Update); a subresource and other operations are left alone', () => {
    const given = pod({ containers: [extended1] });
    assert.deepEqual(admitted(given, 'UPDATE').spec?.tolerations, [tolerationFor(device1)]);
    assert.equal(admitted(given, 'UPDATE', 'status'), given);
    assert.equal(plugin.handles(podAttributes('DELETE', given)), false);
    assert.equal(plugin.handles(podAttributes('CONNECT', given)), false);
  });

  describe('which names are extended (helper.IsExtendedResourceName)', () => {
    const extended = [
      'example.com/gpu',
      'nvidia.com/gpu',
      'a/b',
      'example.com/A_b.c-D',
      `${'a'.repeat(244)}/x`, // "requests." + 244 = 253, a DNS subdomain's limit
      `example.com/${'x'.repeat(63)}`,
    ];
    const notExtended = [
      'cpu',
      'memory',
      'ephemeral-storage',
      'hugepages-2Mi',
      'nvidia.com', // no "/": implicitly kubernetes.io
      'kubernetes.io/foo',
      'example.kubernetes.io/foo', // "kubernetes.io/" anywhere is native
      'deviceclass.resource.kubernetes.io/gpu-class', // the DRA implicit extended resource (1.34+) is native by its domain
      'requests.example.com/gpu',
      `${'a'.repeat(245)}/x`, // "requests." + 245 = 254
      `example.com/${'x'.repeat(64)}`,
      'Example.com/x', // an upper-case prefix is no DNS subdomain
      'example.com/x/y',
      'example.com/',
      '/x',
      'example.com/-x',
      'example.com/ü',
      '__proto__',
    ];
    const shown = (name: string): string => JSON.stringify(name.length > 40 ? `${name.slice(0, 20)}…` : name);
    for (const name of extended) {
      it(`${shown(name)} is extended`, () => {
        assert.ok(isExtendedResourceName(name));
      });
    }
    for (const name of notExtended) {
      it(`${shown(name)} is not`, () => {
        assert.ok(!isExtendedResourceName(name));
      });
    }

    it('the requested names are collected once each, in byte order', () => {
      const given = pod({
        containers: [requesting({ 'b.com/z': '1', cpu: '1', 'a.com/z': '1' }, { 'B.com/z': '1', 'b.com/z': '1' })],
        initContainers: [requesting({ 'a.com/z': '1', 'a.com/Z': '1' })],
      });
      assert.deepEqual(requestedExtendedResources(given), ['a.com/Z', 'a.com/z', 'b.com/z']);
    });

    it('hostile shapes read as no resources, never a throw', () => {
      const given = {
        spec: {
          containers: [null, 1, { resources: null }, { resources: { requests: [] } }, { resources: { limits: 'x' } }],
          initContainers: {},
        },
      } as unknown as Pod;
      assert.deepEqual(requestedExtendedResources(given), []);
    });
  });

  it('merge work is linear: n resources against n tolerations read each toleration once (n and 4n compared)', () => {
    function reads(n: number): number {
      let count = 0;
      const counted = (i: number): Toleration => {
        const toleration = {};
        for (const field of ['key', 'operator', 'value', 'effect'])
          Object.defineProperty(toleration, field, {
            enumerable: true,
            get: () => {
              count++;
              return field === 'key' ? `example.com/t${i}` : field === 'operator' ? 'Exists' : field === 'effect' ? 'NoSchedule' : '';
            },
          });
        return toleration;
      };
      const tolerations = Array.from({ length: n }, (_, i) => counted(i));
      const resources = Array.from({ length: n }, (_, i) => `example.com/r${i}`).sort();
      const result = addExtendedResourceTolerations(tolerations, resources);
      assert.equal(result.length, 2 * n);
      return count;
    }
    const small = reads(500);
    const large = reads(2000);
    assert.ok(large / small <= 5, `4n cost ${large / small} times n: quadratic`);
  });
});

describe('ExtendedResourceToleration in the pipeline, on UPDATE', () => {
  const pipeline = createPipeline({ mutating: [plugin], validating: [], gates: defaultFeatureGates, clusterFacts: emptyClusterFacts });
  const withSeconds = { ...tolerationFor(device1), tolerationSeconds: 5 };

  it("UPDATE drops a matching toleration's tolerationSeconds as upstream does: the pipeline's append-only guard allows what the API server allows", async () => {
    const old = pod({ containers: [extended1Container()], tolerations: [tolerationFor(device1)] });
    const updated = pod({ containers: [extended1Container()], tolerations: [withSeconds] });
    const result = await pipeline.review(
      { apiVersion: 'admission.k8s.io/v1', uid: 'u', attributes: podAttributes('UPDATE', updated, { oldObject: old }) },
      ['mutate'],
    );
    assert.equal(result.decision.allowed, true);
    assert.deepEqual(result.decision.patch, [{ op: 'remove', path: '/spec/tolerations/0/tolerationSeconds' }]);
  });

  it('UPDATE re-appends the toleration an update left out (the API server lets tolerations move)', async () => {
    const old = pod({ containers: [extended1Container()], tolerations: [tolerationFor(device1)] });
    const updated = pod({ containers: [extended1Container()], tolerations: [] });
    const result = await pipeline.review(
      { apiVersion: 'admission.k8s.io/v1', uid: 'u', attributes: podAttributes('UPDATE', updated, { oldObject: old }) },
      ['mutate'],
    );
    assert.equal(result.decision.allowed, true);
    assert.deepEqual(result.decision.patch, [{ op: 'add', path: '/spec/tolerations/0', value: tolerationFor(device1) }]);
  });

  function extended1Container(): Container {
    return requesting({ [device1]: '1' }, { [device1]: '1' });
  }
});
