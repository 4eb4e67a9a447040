import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Container, Pod, PodSpec, QOSClass, ResourceList } from '../../src/api/types.js';
import fc from 'fast-check';
import { computePodQOS, getPodQOS, isBestEffortPod } from '../../src/tolerations/qos.js';

const gateOn = { PodLevelResources: true };
const gateOff = { PodLevelResources: false };

function container(requests?: ResourceList, limits?: ResourceList): Container {
  const resources: Container['resources'] = {};
  if (requests !== undefined) {
    resources.requests = requests;
  }
  if (limits !== undefined) {
    resources.limits = limits;
  }
  return { name: 'c', resources };
}

const guaranteed = (cpu: string, memory: string): Container => container({ cpu, memory }, { cpu, memory });

type Row = { name: string; given: PodSpec; want: QOSClass };

function runRows(rows: readonly Row[], gates = gateOn): void {
  for (const row of rows) {
    it(row.name, () => {
      assert.equal(computePodQOS(row.given, gates), row.want);
    });
  }
}

describe('computePodQOS: BestEffort', () => {
  runRows([
    { name: 'a pod without containers is BestEffort', given: {}, want: 'BestEffort' },
    { name: 'a container without resources is BestEffort', given: { containers: [{ name: 'c' }] }, want: 'BestEffort' },
    { name: 'a container with empty requests and limits is BestEffort', given: { containers: [container({}, {})] }, want: 'BestEffort' },
    {
      name: 'zero cpu and memory count as not set',
      given: { containers: [container({ cpu: '0', memory: '0' }, { cpu: '0', memory: '0Gi' })] },
      want: 'BestEffort',
    },
    {
      name: 'extended resources, hugepages and ephemeral-storage are ignored',
      given: {
        containers: [
          container(
            { 'example.com/gpu': '1', 'hugepages-2Mi': '4Mi', 'ephemeral-storage': '1Gi' },
            { 'example.com/gpu': '1', 'hugepages-2Mi': '4Mi', 'ephemeral-storage': '1Gi' },
          ),
        ],
      },
      want: 'BestEffort',
    },
    {
      name: 'an unparsable quantity is treated as not set',
      given: { containers: [container({ cpu: 'lots' }, { memory: '1 Gi' })] },
      want: 'BestEffort',
    },
    {
      name: 'a null resource list is treated as absent',
      given: { containers: [{ name: 'c', resources: { requests: null as unknown as ResourceList } }] },
      want: 'BestEffort',
    },
    {
      name: 'ephemeral containers are ignored, resources or not',
      given: { containers: [{ name: 'c' }], ephemeralContainers: [guaranteed('1', '1Gi')] },
      want: 'BestEffort',
    },
  ]);
});

describe('computePodQOS: Guaranteed', () => {
  runRows([
    {
      name: 'equal cpu and memory requests and limits are Guaranteed',
      given: { containers: [guaranteed('1', '1Gi')] },
      want: 'Guaranteed',
    },
    {
      name: 'requests and limits compare as quantities: 1 equals 1000m',
      given: { containers: [container({ cpu: '1', memory: '1Gi' }, { cpu: '1000m', memory: '1073741824' })] },
      want: 'Guaranteed',
    },
    {
      name: 'a JSON number compares with a string: 0.5 equals 500m',
      given: { containers: [container({ cpu: 0.5, memory: '128Mi' }, { cpu: '500m', memory: '128Mi' })] },
      want: 'Guaranteed',
    },
    {
      name: 'several Guaranteed containers are Guaranteed',
      given: { containers: [guaranteed('1', '1Gi'), guaranteed('250m', '64Mi')] },
      want: 'Guaranteed',
    },
    {
      name: 'a Guaranteed init container keeps the pod Guaranteed',
      given: { containers: [guaranteed('1', '1Gi')], initContainers: [guaranteed('2', '2Gi')] },
      want: 'Guaranteed',
    },
    {
      name: 'a Guaranteed restartable sidecar keeps the pod Guaranteed',
      given: { containers: [guaranteed('1', '1Gi')], initContainers: [{ ...guaranteed('100m', '32Mi'), restartPolicy: 'Always' }] },
      want: 'Guaranteed',
    },
    {
      name: 'extra extended resources do not spoil Guaranteed',
      given: {
        containers: [container({ cpu: '1', memory: '1Gi', 'example.com/gpu': '1' }, { cpu: '1', memory: '1Gi', 'example.com/gpu': '2' })],
      },
      want: 'Guaranteed',
    },
  ]);
});

describe('computePodQOS: Burstable', () => {
  runRows([
    { name: 'a cpu request alone is Burstable', given: { containers: [container({ cpu: '100m' })] }, want: 'Burstable' },
    { name: 'a memory limit alone is Burstable', given: { containers: [container(undefined, { memory: '1Gi' })] }, want: 'Burstable' },
    {
      name: 'requests below limits are Burstable',
      given: { containers: [container({ cpu: '500m', memory: '1Gi' }, { cpu: '1', memory: '1Gi' })] },
      want: 'Burstable',
    },
    {
      name: '1Gi and 1G are different quantities: Burstable',
      given: { containers: [container({ cpu: '1', memory: '1G' }, { cpu: '1', memory: '1Gi' })] },
      want: 'Burstable',
    },
    {
      name: 'limits without requests are Burstable: requests are compared as given, since the API server defaults them from limits before admission',
      given: { containers: [container(undefined, { cpu: '1', memory: '1Gi' })] },
      want: 'Burstable',
    },
    { name: 'limits on cpu only are Burstable', given: { containers: [container({ cpu: '1' }, { cpu: '1' })] }, want: 'Burstable' },
    {
      name: 'a zero memory limit counts as not set: Burstable',
      given: { containers: [container({ cpu: '1', memory: '0' }, { cpu: '1', memory: '0' })] },
      want: 'Burstable',
    },
    {
      name: 'a Guaranteed container beside a BestEffort one is Burstable',
      given: { containers: [guaranteed('1', '1Gi'), { name: 'sidecar' }] },
      want: 'Burstable',
    },
    {
      name: 'a BestEffort init container beside a Guaranteed container is Burstable',
      given: { containers: [guaranteed('1', '1Gi')], initContainers: [{ name: 'init' }] },
      want: 'Burstable',
    },
    {
      name: 'an init container with a request makes a BestEffort pod Burstable',
      given: { containers: [{ name: 'c' }], initContainers: [container({ memory: '64Mi' })] },
      want: 'Burstable',
    },
    {
      name: 'a restartable sidecar with a request makes a BestEffort pod Burstable',
      given: { containers: [{ name: 'c' }], initContainers: [{ ...container({ cpu: '10m' }), restartPolicy: 'Always' }] },
      want: 'Burstable',
    },
  ]);
});

describe('computePodQOS: pod-level resources with the PodLevelResources gate on', () => {
  runRows([
    {
      name: 'pod-level cpu and memory with equal requests and limits are Guaranteed whatever the containers say',
      given: {
        resources: { requests: { cpu: '1', memory: '1Gi' }, limits: { cpu: '1', memory: '1Gi' } },
        containers: [container({ cpu: '100m' })],
      },
      want: 'Guaranteed',
    },
    {
      name: 'pod-level requests below limits are Burstable even with Guaranteed containers',
      given: {
        resources: { requests: { cpu: '500m', memory: '1Gi' }, limits: { cpu: '1', memory: '1Gi' } },
        containers: [guaranteed('1', '1Gi')],
      },
      want: 'Burstable',
    },
    {
      name: 'empty pod-level resources decide alone: BestEffort despite Guaranteed containers',
      given: { resources: {}, containers: [guaranteed('1', '1Gi')] },
      want: 'BestEffort',
    },
    {
      name: 'pod-level resources with only hugepages are BestEffort',
      given: { resources: { limits: { 'hugepages-2Mi': '4Mi' } }, containers: [guaranteed('1', '1Gi')] },
      want: 'BestEffort',
    },
    {
      name: 'pod-level requests without limits are Burstable',
      given: { resources: { requests: { cpu: '1', memory: '1Gi' } } },
      want: 'Burstable',
    },
    {
      name: 'pod-level limits on memory only are Burstable',
      given: { resources: { requests: { memory: '1Gi' }, limits: { memory: '1Gi' } } },
      want: 'Burstable',
    },
    {
      name: 'null pod-level resources are absent: the containers decide',
      given: { resources: null as unknown as PodSpec['resources'], containers: [guaranteed('1', '1Gi')] },
      want: 'Guaranteed',
    },
  ]);
});

describe('computePodQOS: pod-level resources with the PodLevelResources gate off', () => {
  runRows(
    [
      {
        name: 'empty pod-level resources are ignored: the containers decide',
        given: { resources: {}, containers: [guaranteed('1', '1Gi')] },
        want: 'Guaranteed',
      },
      {
        name: 'Guaranteed pod-level resources are ignored: BestEffort containers decide',
        given: { resources: { requests: { cpu: '1', memory: '1Gi' }, limits: { cpu: '1', memory: '1Gi' } }, containers: [{ name: 'c' }] },
        want: 'BestEffort',
      },
    ],
    gateOff,
  );
});

describe('getPodQOS', () => {
  const rows: { name: string; given: Pod; want: string }[] = [
    {
      name: 'a non-empty status.qosClass is honoured over the spec',
      given: { spec: { containers: [{ name: 'c' }] }, status: { qosClass: 'Guaranteed' } },
      want: 'Guaranteed',
    },
    {
      name: 'status.qosClass is returned as it is, even if it is not a known class',
      given: { spec: {}, status: { qosClass: 'Platinum' } },
      want: 'Platinum',
    },
    {
      name: 'an empty status.qosClass falls back to computing',
      given: { spec: { containers: [guaranteed('1', '1Gi')] }, status: { qosClass: '' } },
      want: 'Guaranteed',
    },
    { name: 'a missing status computes from the spec', given: { spec: { containers: [container({ cpu: '1' })] } }, want: 'Burstable' },
    { name: 'a pod without spec is BestEffort', given: {}, want: 'BestEffort' },
  ];
  for (const row of rows) {
    it(row.name, () => {
      assert.equal(getPodQOS(row.given, gateOn), row.want);
    });
  }

  it('passes the gate through to the computation', () => {
    const pod: Pod = { spec: { resources: {}, containers: [guaranteed('1', '1Gi')] } };
    assert.equal(getPodQOS(pod, gateOn), 'BestEffort');
    assert.equal(getPodQOS(pod, gateOff), 'Guaranteed');
  });
});

describe('isBestEffortPod, the short cut PodTolerationRestriction takes', () => {
  const quantity = fc.constantFrom('0', '0m', '100m', '1', '128Mi', 'bogus', 2, 0);
  const list = fc.dictionary(fc.constantFrom('cpu', 'memory', 'ephemeral-storage', 'nvidia.com/gpu'), quantity, { maxKeys: 3 });
  const requirements = fc.record({ requests: list, limits: list }, { requiredKeys: [] });
  const containers = fc.array(fc.record({ name: fc.constant('c'), resources: requirements }, { requiredKeys: ['name'] }), { maxLength: 4 });
  const pod = fc.record(
    {
      spec: fc.record(
        { containers, initContainers: containers, ephemeralContainers: containers, resources: requirements },
        { requiredKeys: [] },
      ),
      status: fc.record({ qosClass: fc.constantFrom('', 'BestEffort', 'Burstable', 'Guaranteed') }, { requiredKeys: [] }),
    },
    { requiredKeys: [] },
  );

  it('agrees with getPodQOS(pod) === BestEffort on every generated pod, with the PodLevelResources gate on and off', () => {
    fc.assert(
      fc.property(pod, fc.boolean(), (generated, podLevel) => {
        const gates = { PodLevelResources: podLevel };
        assert.equal(isBestEffortPod(generated as Pod, gates), getPodQOS(generated as Pod, gates) === 'BestEffort');
      }),
      { numRuns: 2000, seed: 4242 },
    );
  });
});

/**
 * The class per Kubernetes version for pod-level `resources` that set nothing the QoS helper
 * counts: v1.35.8 and v1.36.3 (no PodLevelResourcesFixKubeletQOSClass gate, which is off here)
 * let any present `spec.resources` decide; v1.37.2 (the gate beta, on by default) falls back to
 * the containers unless a request or limit names cpu, memory or hugepages-* (helper
 * IsPodLevelResourcesSet). Upstream vectors: pkg/apis/core/v1/helper/qos/qos_test.go at v1.37.2.
 */
describe('computePodQOS by version: PodLevelResourcesFixKubeletQOSClass', () => {
  const v135 = { PodLevelResources: true, PodLevelResourcesFixKubeletQOSClass: false };
  const v136 = v135;
  const v137 = { PodLevelResources: true, PodLevelResourcesFixKubeletQOSClass: true };
  const rows: { name: string; given: PodSpec; want: { '1.35': QOSClass; '1.36': QOSClass; '1.37': QOSClass } }[] = [
    {
      name: 'resources: {} beside Guaranteed containers',
      given: { resources: {}, containers: [guaranteed('1', '1Gi')] },
      want: { '1.35': 'BestEffort', '1.36': 'BestEffort', '1.37': 'Guaranteed' },
    },
    {
      name: 'resources with empty requests and limits beside a Burstable container',
      given: { resources: { requests: {}, limits: {} }, containers: [container({ cpu: '100m' })] },
      want: { '1.35': 'BestEffort', '1.36': 'BestEffort', '1.37': 'Burstable' },
    },
    {
      name: 'resources naming only ephemeral-storage (not a pod-level resource) beside a Burstable container',
      given: { resources: { requests: { 'ephemeral-storage': '1Gi' } }, containers: [container({ memory: '1Gi' })] },
      want: { '1.35': 'BestEffort', '1.36': 'BestEffort', '1.37': 'Burstable' },
    },
    {
      name: 'resources naming hugepages only: set, so the pod level still decides (BestEffort) in 1.37 too',
      given: { resources: { limits: { 'hugepages-2Mi': '4Mi' } }, containers: [guaranteed('1', '1Gi')] },
      want: { '1.35': 'BestEffort', '1.36': 'BestEffort', '1.37': 'BestEffort' },
    },
    {
      name: 'resources naming cpu 0: set (a key counts, whatever its quantity), so the pod level decides',
      given: { resources: { requests: { cpu: '0' } }, containers: [guaranteed('1', '1Gi')] },
      want: { '1.35': 'BestEffort', '1.36': 'BestEffort', '1.37': 'BestEffort' },
    },
    {
      name: 'Guaranteed pod-level resources decide on every version',
      given: {
        resources: { requests: { cpu: '1', memory: '1Gi' }, limits: { cpu: '1', memory: '1Gi' } },
        containers: [container({ cpu: '100m' })],
      },
      want: { '1.35': 'Guaranteed', '1.36': 'Guaranteed', '1.37': 'Guaranteed' },
    },
  ];
  for (const row of rows) {
    it(`${row.name}: 1.35 ${row.want['1.35']}, 1.36 ${row.want['1.36']}, 1.37 ${row.want['1.37']}`, () => {
      assert.equal(computePodQOS(row.given, v135), row.want['1.35']);
      assert.equal(computePodQOS(row.given, v136), row.want['1.36']);
      assert.equal(computePodQOS(row.given, v137), row.want['1.37']);
      for (const [version, gates] of [
        ['1.35', v135],
        ['1.37', v137],
      ] as const) {
        assert.equal(isBestEffortPod({ spec: row.given }, gates), row.want[version] === 'BestEffort', `isBestEffortPod at ${version}`);
      }
    });
  }
});
