import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Pod, Toleration } from '../../src/api/types.js';
import { createDefaultTolerationSeconds } from '../../src/plugins/default-toleration-seconds.js';
import type { AdmissionAttributes, Operation } from '../../src/plugins/plugin.js';
import { pluginContext, podAttributes } from '../support/plugin-inputs.js';

const context = pluginContext();

function podWith(tolerations: Toleration[] | null | undefined): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'p', namespace: 'default' },
    spec: { containers: [{ name: 'c' }], tolerations },
  };
}

const notReady300: Toleration = { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 };
const unreachable300: Toleration = {
  key: 'node.kubernetes.io/unreachable',
  operator: 'Exists',
  effect: 'NoExecute',
  tolerationSeconds: 300,
};

function admittedTolerations(plugin: ReturnType<typeof createDefaultTolerationSeconds>, pod: Pod, operation: Operation = 'CREATE') {
  const outcome = plugin.admit(pod, podAttributes(operation, pod), context);
  assert.equal(outcome.denial, undefined);
  return (outcome.object as Pod).spec?.tolerations;
}

describe('DefaultTolerationSeconds', () => {
  // Ported from plugin/pkg/admission/defaulttolerationseconds/admission_test.go (TestForgivenessAdmission),
  // plus the rules of docs/kubernetes-rules.md#defaulttolerationseconds.
  const rows: { name: string; given: Toleration[] | null | undefined; want: Toleration[] }[] = [
    {
      name: 'a pod with no tolerations gets not-ready and unreachable, 300 s each, not-ready first',
      given: undefined,
      want: [notReady300, unreachable300],
    },
    {
      name: 'a pod whose tolerations are null gets both',
      given: null,
      want: [notReady300, unreachable300],
    },
    {
      name: 'the deprecated alpha not-ready and unreachable keys do not count, and are left untouched',
      given: [
        { key: 'node.alpha.kubernetes.io/notReady', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
        { key: 'node.alpha.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
      ],
      want: [
        { key: 'node.alpha.kubernetes.io/notReady', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
        { key: 'node.alpha.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
        notReady300,
        unreachable300,
      ],
    },
    {
      name: 'tolerations for other taints do not count: both are appended after them',
      given: [{ key: 'foo', operator: 'Equal', value: 'bar', effect: 'NoSchedule', tolerationSeconds: 700 }],
      want: [{ key: 'foo', operator: 'Equal', value: 'bar', effect: 'NoSchedule', tolerationSeconds: 700 }, notReady300, unreachable300],
    },
    {
      name: 'an existing not-ready NoExecute toleration is kept with its own seconds and only unreachable is added',
      given: [{ key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 700 }],
      want: [{ key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 700 }, unreachable300],
    },
    {
      name: 'an existing unreachable NoExecute toleration is kept and only not-ready is added',
      given: [{ key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 700 }],
      want: [{ key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 700 }, notReady300],
    },
    {
      name: 'a pod tolerating both already is left unchanged',
      given: [
        { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 700 },
        { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 700 },
      ],
      want: [
        { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 700 },
        { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 700 },
      ],
    },
    {
      name: 'an unreachable toleration with an empty effect covers unreachable:NoExecute',
      given: [{ key: 'node.kubernetes.io/unreachable', operator: 'Exists', tolerationSeconds: 700 }],
      want: [{ key: 'node.kubernetes.io/unreachable', operator: 'Exists', tolerationSeconds: 700 }, notReady300],
    },
    {
      name: 'a wildcard {operator: Exists} covers both',
      given: [{ operator: 'Exists', tolerationSeconds: 700 }],
      want: [{ operator: 'Exists', tolerationSeconds: 700 }],
    },
    {
      name: 'an empty key with effect NoExecute covers both',
      given: [{ operator: 'Exists', effect: 'NoExecute' }],
      want: [{ operator: 'Exists', effect: 'NoExecute' }],
    },
    {
      name: 'an empty key with effect NoSchedule covers neither',
      given: [{ operator: 'Exists', effect: 'NoSchedule' }],
      want: [{ operator: 'Exists', effect: 'NoSchedule' }, notReady300, unreachable300],
    },
    {
      name: 'not-ready with effect NoSchedule does not count',
      given: [{ key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoSchedule' }],
      want: [{ key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoSchedule' }, notReady300, unreachable300],
    },
    {
      name: 'not-ready Equal "x" counts: the operator and value are not looked at',
      given: [{ key: 'node.kubernetes.io/not-ready', operator: 'Equal', value: 'x', effect: 'NoExecute' }],
      want: [{ key: 'node.kubernetes.io/not-ready', operator: 'Equal', value: 'x', effect: 'NoExecute' }, unreachable300],
    },
    {
      name: 'not-ready Gt "5" counts',
      given: [{ key: 'node.kubernetes.io/not-ready', operator: 'Gt', value: '5', effect: 'NoExecute' }],
      want: [{ key: 'node.kubernetes.io/not-ready', operator: 'Gt', value: '5', effect: 'NoExecute' }, unreachable300],
    },
    {
      name: 'not-ready with tolerationSeconds -10 counts: the seconds are not looked at',
      given: [{ key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: -10 }],
      want: [{ key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: -10 }, unreachable300],
    },
    {
      name: 'key matching is exact: a different case does not count',
      given: [{ key: 'node.kubernetes.io/Not-Ready', operator: 'Exists', effect: 'NoExecute' }],
      want: [{ key: 'node.kubernetes.io/Not-Ready', operator: 'Exists', effect: 'NoExecute' }, notReady300, unreachable300],
    },
    {
      name: 'duplicates are not removed',
      given: [
        { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute' },
        { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute' },
      ],
      want: [
        { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute' },
        { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute' },
        unreachable300,
      ],
    },
  ];
  for (const row of rows) {
    it(row.name, () => {
      assert.deepEqual(admittedTolerations(createDefaultTolerationSeconds(), podWith(row.given)), row.want);
    });
  }

  it('the seconds are configurable, each on its own', () => {
    const plugin = createDefaultTolerationSeconds({ notReadySeconds: 60, unreachableSeconds: 120 });
    assert.deepEqual(admittedTolerations(plugin, podWith(undefined)), [
      { ...notReady300, tolerationSeconds: 60 },
      { ...unreachable300, tolerationSeconds: 120 },
    ]);
  });

  it('UPDATE adds the tolerations too', () => {
    assert.deepEqual(admittedTolerations(createDefaultTolerationSeconds(), podWith([]), 'UPDATE'), [notReady300, unreachable300]);
  });

  it('a pod without a spec gets a spec with both tolerations', () => {
    const pod: Pod = { metadata: { name: 'p' } };
    assert.deepEqual(admittedTolerations(createDefaultTolerationSeconds(), pod), [notReady300, unreachable300]);
  });

  it('the input object is not modified and unchanged pods come back as the same object', () => {
    const plugin = createDefaultTolerationSeconds();
    const given = podWith([{ key: 'foo', operator: 'Exists' }]);
    const snapshot = structuredClone(given);
    const outcome = plugin.admit(given, podAttributes('CREATE', given), context);
    assert.deepEqual(given, snapshot);
    assert.notEqual(outcome.object, given);
    assert.equal((outcome.object as Pod).spec?.tolerations?.[0], given.spec?.tolerations?.[0]);

    const covered = podWith([{ operator: 'Exists' }]);
    assert.equal(plugin.admit(covered, podAttributes('CREATE', covered), context).object, covered);
  });

  it('the rest of the pod is kept', () => {
    const given = podWith(undefined);
    const outcome = createDefaultTolerationSeconds().admit(given, podAttributes('CREATE', given), context);
    assert.deepEqual({ ...outcome.object, spec: { ...(outcome.object as Pod).spec, tolerations: undefined } }, given);
  });

  describe('handles', () => {
    const plugin = createDefaultTolerationSeconds();
    const pod = podWith(undefined);
    const rows: { name: string; given: AdmissionAttributes; want: boolean }[] = [
      { name: 'pod CREATE is handled', given: podAttributes('CREATE', pod), want: true },
      { name: 'pod UPDATE is handled', given: podAttributes('UPDATE', pod), want: true },
      { name: 'pod DELETE is not handled', given: podAttributes('DELETE', pod), want: false },
      { name: 'pod CONNECT is not handled', given: podAttributes('CONNECT', pod), want: false },
      { name: 'a pod subresource (status) is ignored', given: podAttributes('UPDATE', pod, { subResource: 'status' }), want: false },
      {
        name: 'a non-pod resource is ignored',
        given: {
          ...podAttributes('CREATE', pod),
          kind: { group: 'apps', version: 'v1', kind: 'DaemonSet' },
          resource: { group: 'apps', version: 'v1', resource: 'daemonsets' },
        },
        want: false,
      },
    ];
    for (const row of rows) {
      it(row.name, () => {
        assert.equal(plugin.handles(row.given), row.want);
        if (!row.want) {
          // admit guards itself too: the object comes back untouched.
          assert.equal(plugin.admit(pod, row.given, context).object, pod);
        }
      });
    }
  });
});
