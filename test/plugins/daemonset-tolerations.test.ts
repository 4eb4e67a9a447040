import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { OwnerReference, Pod, Toleration } from '../../src/api/types.js';
import { createDaemonSetTolerations } from '../../src/plugins/daemonset-tolerations.js';
import type { AdmissionAttributes, Operation } from '../../src/plugins/plugin.js';
import { pluginContext, podAttributes } from '../support/plugin-inputs.js';

const context = pluginContext();

const daemonSetOwner: OwnerReference = {
  apiVersion: 'apps/v1',
  kind: 'DaemonSet',
  name: 'agent',
  uid: 'u1',
  controller: true,
  blockOwnerDeletion: true,
};

function daemonPod(tolerations: Toleration[] | null | undefined, options: { hostNetwork?: boolean; owners?: OwnerReference[] } = {}): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'agent-x', namespace: 'kube-system', ownerReferences: options.owners ?? [daemonSetOwner] },
    spec: { containers: [{ name: 'c' }], tolerations, ...(options.hostNetwork === undefined ? {} : { hostNetwork: options.hostNetwork }) },
  };
}

const notReady: Toleration = { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute' };
const unreachable: Toleration = { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute' };
const diskPressure: Toleration = { key: 'node.kubernetes.io/disk-pressure', operator: 'Exists', effect: 'NoSchedule' };
const memoryPressure: Toleration = { key: 'node.kubernetes.io/memory-pressure', operator: 'Exists', effect: 'NoSchedule' };
const pidPressure: Toleration = { key: 'node.kubernetes.io/pid-pressure', operator: 'Exists', effect: 'NoSchedule' };
const unschedulable: Toleration = { key: 'node.kubernetes.io/unschedulable', operator: 'Exists', effect: 'NoSchedule' };
const networkUnavailable: Toleration = { key: 'node.kubernetes.io/network-unavailable', operator: 'Exists', effect: 'NoSchedule' };
const daemonSet = [notReady, unreachable, diskPressure, memoryPressure, pidPressure, unschedulable];

function admittedTolerations(pod: Pod, operation: Operation = 'CREATE') {
  const outcome = createDaemonSetTolerations().admit(pod, podAttributes(operation, pod), context);
  assert.equal(outcome.denial, undefined);
  return (outcome.object as Pod).spec?.tolerations;
}

describe('DaemonSetTolerations', () => {
  describe('on CREATE (AddOrUpdateDaemonPodTolerations)', () => {
    const rows: { name: string; given: Pod; want: Toleration[] | null | undefined }[] = [
      { name: 'a daemon pod with no tolerations gets the six, in order', given: daemonPod(undefined), want: daemonSet },
      { name: 'a daemon pod with null tolerations gets the six', given: daemonPod(null), want: daemonSet },
      {
        name: 'hostNetwork adds network-unavailable as the seventh',
        given: daemonPod([], { hostNetwork: true }),
        want: [...daemonSet, networkUnavailable],
      },
      { name: 'hostNetwork false adds no network-unavailable', given: daemonPod([], { hostNetwork: false }), want: daemonSet },
      {
        name: 'a wildcard {operator: Exists} does not match: the set is appended next to it',
        given: daemonPod([{ operator: 'Exists' }]),
        want: [{ operator: 'Exists' }, ...daemonSet],
      },
      {
        name: 'not-ready with an empty effect does not match: not-ready NoExecute is appended',
        given: daemonPod([{ key: 'node.kubernetes.io/not-ready', operator: 'Exists' }]),
        want: [{ key: 'node.kubernetes.io/not-ready', operator: 'Exists' }, ...daemonSet],
      },
      {
        name: 'unschedulable with operator Equal does not match: unschedulable Exists is appended',
        given: daemonPod([{ key: 'node.kubernetes.io/unschedulable', operator: 'Equal', effect: 'NoSchedule' }]),
        want: [{ key: 'node.kubernetes.io/unschedulable', operator: 'Equal', effect: 'NoSchedule' }, ...daemonSet],
      },
      {
        name: 'an existing not-ready NoExecute Exists with tolerationSeconds 300 is replaced in place, dropping its seconds',
        given: daemonPod([
          { key: 'a', operator: 'Exists' },
          { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
          { key: 'b', operator: 'Exists' },
        ]),
        want: [
          { key: 'a', operator: 'Exists' },
          notReady,
          { key: 'b', operator: 'Exists' },
          unreachable,
          diskPressure,
          memoryPressure,
          pidPressure,
          unschedulable,
        ],
      },
      {
        name: 'every matching duplicate is replaced',
        given: daemonPod([
          { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 10 },
          { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 20 },
        ]),
        want: [unreachable, unreachable, notReady, diskPressure, memoryPressure, pidPressure, unschedulable],
      },
      {
        name: 'entries already present keep their place and nothing is appended for them',
        given: daemonPod([unschedulable, memoryPressure]),
        want: [unschedulable, memoryPressure, notReady, unreachable, diskPressure, pidPressure],
      },
      {
        name: 'a pod owned by a DaemonSet that is not its controller gets nothing',
        given: daemonPod([], { owners: [{ ...daemonSetOwner, controller: false }] }),
        want: [],
      },
      {
        name: 'a pod owned by a DaemonSet without the controller field gets nothing',
        given: daemonPod([], { owners: [{ apiVersion: 'apps/v1', kind: 'DaemonSet', name: 'agent', uid: 'u1' }] }),
        want: [],
      },
      {
        name: 'a DaemonSet owner of another apiVersion (extensions/v1beta1) gets nothing',
        given: daemonPod([], { owners: [{ ...daemonSetOwner, apiVersion: 'extensions/v1beta1' }] }),
        want: [],
      },
      {
        name: 'a ReplicaSet-owned pod gets nothing',
        given: daemonPod(undefined, { owners: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'rs', uid: 'u2', controller: true }] }),
        want: undefined,
      },
      {
        name: 'a DaemonSet owner among several owners counts',
        given: daemonPod([], { owners: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'cm', uid: 'u3' }, daemonSetOwner] }),
        want: daemonSet,
      },
    ];
    for (const row of rows) {
      it(row.name, () => {
        assert.deepEqual(admittedTolerations(row.given), row.want);
      });
    }
  });

  describe('on UPDATE (append-only)', () => {
    const rows: { name: string; given: Pod; want: Toleration[] }[] = [
      {
        name: 'missing tolerations are appended',
        given: daemonPod([{ key: 'a', operator: 'Exists' }]),
        want: [{ key: 'a', operator: 'Exists' }, ...daemonSet],
      },
      {
        name: 'a matching toleration with tolerationSeconds is kept as it is, not replaced',
        given: daemonPod([{ key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 }]),
        want: [
          { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
          unreachable,
          diskPressure,
          memoryPressure,
          pidPressure,
          unschedulable,
        ],
      },
      {
        name: 'hostNetwork appends network-unavailable on UPDATE too',
        given: daemonPod([...daemonSet], { hostNetwork: true }),
        want: [...daemonSet, networkUnavailable],
      },
    ];
    for (const row of rows) {
      it(row.name, () => {
        assert.deepEqual(admittedTolerations(row.given, 'UPDATE'), row.want);
      });
    }
  });

  it('a second run returns the same object (idempotent)', () => {
    const plugin = createDaemonSetTolerations();
    const first = daemonPod([{ key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 }], {
      hostNetwork: true,
    });
    const once = plugin.admit(first, podAttributes('CREATE', first), context).object;
    assert.ok(once !== undefined);
    assert.equal(plugin.admit(once, podAttributes('CREATE', once), context).object, once);
    assert.equal(plugin.admit(once, podAttributes('UPDATE', once), context).object, once);
  });

  it('the input is not modified and untouched tolerations stay the same objects', () => {
    const kept: Toleration = { key: 'a', operator: 'Exists' };
    const given = daemonPod([
      kept,
      { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
    ]);
    const snapshot = structuredClone(given);
    const outcome = createDaemonSetTolerations().admit(given, podAttributes('CREATE', given), context);
    assert.deepEqual(given, snapshot);
    assert.equal((outcome.object as Pod).spec?.tolerations?.[0], kept);
  });

  describe('handles', () => {
    const plugin = createDaemonSetTolerations();
    const pod = daemonPod(undefined);
    const rows: { name: string; given: AdmissionAttributes; want: boolean }[] = [
      { name: 'pod CREATE is handled', given: podAttributes('CREATE', pod), want: true },
      { name: 'pod UPDATE is handled', given: podAttributes('UPDATE', pod), want: true },
      { name: 'pod DELETE is not handled', given: podAttributes('DELETE', pod), want: false },
      { name: 'a pod subresource is ignored', given: podAttributes('CREATE', pod, { subResource: 'binding' }), want: false },
      {
        name: 'a non-pod resource is ignored',
        given: { ...podAttributes('CREATE', pod), resource: { group: 'apps', version: 'v1', resource: 'daemonsets' } },
        want: false,
      },
    ];
    for (const row of rows) {
      it(row.name, () => {
        assert.equal(plugin.handles(row.given), row.want);
        if (!row.want) {
          assert.equal(plugin.admit(pod, row.given, context).object, pod);
        }
      });
    }
  });
});
