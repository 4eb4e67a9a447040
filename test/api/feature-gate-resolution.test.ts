/** Which value a gate takes and from where: flag > cluster /metrics > cluster version's default > last known (built-in default at start). */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  clusterGate,
  gateValues,
  initialGates,
  resolveGates,
  type ClusterGateReading,
  type ResolvedGates,
} from '../../src/api/feature-gate-resolution.js';
import type { ExplicitFeatureGates, FeatureGateName } from '../../src/api/feature-gates.js';

const nothing: ClusterGateReading = { metrics: undefined, version: undefined };
const v = (minor: number): ClusterGateReading['version'] => ({ major: 1, minor });

/** The two gates the rows below are about; PodLevelResourcesFixKubeletQOSClass and the DRA gates have their own tests. */
type RowGate = Exclude<FeatureGateName, 'PodLevelResourcesFixKubeletQOSClass' | 'DRADeviceTaints' | 'DRADeviceTaintRules'>;

function summary(gates: ResolvedGates): Record<RowGate, string> {
  return {
    TaintTolerationComparisonOperators: `${gates.TaintTolerationComparisonOperators.enabled}/${gates.TaintTolerationComparisonOperators.source}`,
    PodLevelResources: `${gates.PodLevelResources.enabled}/${gates.PodLevelResources.source}`,
  };
}

describe('initialGates', () => {
  it('is the built-in default for a gate the flag does not set, the flag for one it sets', () => {
    assert.deepEqual(summary(initialGates({})), {
      TaintTolerationComparisonOperators: 'false/default',
      PodLevelResources: 'true/default',
    });
    assert.deepEqual(summary(initialGates({ TaintTolerationComparisonOperators: true })), {
      TaintTolerationComparisonOperators: 'true/flag',
      PodLevelResources: 'true/default',
    });
  });
});

describe('resolveGates', () => {
  const rows: {
    name: string;
    explicit: ExplicitFeatureGates;
    reading: ClusterGateReading;
    previous?: ResolvedGates;
    expected: Record<RowGate, string>;
  }[] = [
    {
      name: '/metrics reports both gates',
      explicit: {},
      reading: {
        metrics: new Map([
          ['TaintTolerationComparisonOperators', true],
          ['PodLevelResources', false],
        ]),
        version: v(35),
      },
      expected: { TaintTolerationComparisonOperators: 'true/cluster-metrics', PodLevelResources: 'false/cluster-metrics' },
    },
    {
      name: 'a flag wins over /metrics',
      explicit: { TaintTolerationComparisonOperators: false },
      reading: { metrics: new Map([['TaintTolerationComparisonOperators', true]]), version: v(35) },
      expected: { TaintTolerationComparisonOperators: 'false/flag', PodLevelResources: 'true/cluster-version' },
    },
    {
      name: 'a gate absent from /metrics takes its version default',
      explicit: {},
      reading: { metrics: new Map([['PodLevelResources', true]]), version: v(33) },
      expected: { TaintTolerationComparisonOperators: 'false/cluster-version', PodLevelResources: 'true/cluster-metrics' },
    },
    {
      name: '/metrics unreadable: both from the version (1.33: PodLevelResources alpha, off)',
      explicit: {},
      reading: { metrics: undefined, version: v(33) },
      expected: { TaintTolerationComparisonOperators: 'false/cluster-version', PodLevelResources: 'false/cluster-version' },
    },
    {
      name: 'neither readable at start: the built-in defaults stay',
      explicit: {},
      reading: nothing,
      expected: { TaintTolerationComparisonOperators: 'false/default', PodLevelResources: 'true/default' },
    },
    {
      name: 'neither readable later: the last known values and sources stay',
      explicit: {},
      reading: nothing,
      previous: resolveGates({}, { metrics: new Map([['TaintTolerationComparisonOperators', true]]), version: v(31) }, initialGates({})),
      expected: { TaintTolerationComparisonOperators: 'true/cluster-metrics', PodLevelResources: 'false/cluster-version' },
    },
    {
      // A /metrics read that failed this time (a timeout, a body over the cap, a 503) says nothing
      // new about an API server of the same version: the value it last reported is an
      // observation, the version's default a guess, which would flip the gate until the next read.
      name: '/metrics unreadable again at the version it was read at: the value /metrics last reported stays',
      explicit: {},
      reading: { metrics: undefined, version: v(33) },
      previous: resolveGates({}, { metrics: new Map([['PodLevelResources', true]]), version: v(33) }, initialGates({})),
      expected: { TaintTolerationComparisonOperators: 'false/cluster-version', PodLevelResources: 'true/cluster-metrics' },
    },
    {
      name: '/metrics unreadable after an upgrade: the new version’s default, not what the old server reported',
      explicit: {},
      reading: { metrics: undefined, version: v(34) },
      previous: resolveGates({}, { metrics: new Map([['PodLevelResources', false]]), version: v(33) }, initialGates({})),
      expected: { TaintTolerationComparisonOperators: 'false/cluster-version', PodLevelResources: 'true/cluster-version' },
    },
    {
      name: '/metrics unreadable, and the version it was read at unknown: the version default',
      explicit: {},
      reading: { metrics: undefined, version: v(34) },
      previous: resolveGates({}, { metrics: new Map([['PodLevelResources', false]]), version: undefined }, initialGates({})),
      expected: { TaintTolerationComparisonOperators: 'false/cluster-version', PodLevelResources: 'true/cluster-version' },
    },
    {
      name: '/metrics without a gate and no version: that gate keeps its last value',
      explicit: {},
      reading: { metrics: new Map([['PodLevelResources', false]]), version: undefined },
      expected: { TaintTolerationComparisonOperators: 'false/default', PodLevelResources: 'false/cluster-metrics' },
    },
  ];
  for (const row of rows) {
    it(row.name, () => {
      assert.deepEqual(summary(resolveGates(row.explicit, row.reading, row.previous ?? initialGates(row.explicit))), row.expected);
    });
  }

  it('records the version and its stage for a version default', () => {
    const gates = resolveGates({}, { metrics: undefined, version: v(36) }, initialGates({}));
    assert.deepEqual(gates.TaintTolerationComparisonOperators.version, {
      version: { major: 1, minor: 36 },
      default: { enabled: false, stage: 'ALPHA', beyondTable: false },
    });
  });
});

describe('resolveGates: PodLevelResourcesFixKubeletQOSClass follows the version the API server reports', () => {
  for (const [minor, expected] of [
    [35, 'false/cluster-version'],
    [36, 'false/cluster-version'],
    [37, 'true/cluster-version'],
  ] as const) {
    it(`1.${minor} without /metrics: ${expected}`, () => {
      const gate = resolveGates({}, { metrics: undefined, version: v(minor) }, initialGates({})).PodLevelResourcesFixKubeletQOSClass;
      assert.equal(`${gate.enabled}/${gate.source}`, expected);
    });
  }

  it("1.37 whose /metrics says off (--feature-gates=PodLevelResourcesFixKubeletQOSClass=false): the server's word", () => {
    const reading: ClusterGateReading = { metrics: new Map([['PodLevelResourcesFixKubeletQOSClass', false]]), version: v(37) };
    const gate = resolveGates({}, reading, initialGates({})).PodLevelResourcesFixKubeletQOSClass;
    assert.equal(`${gate.enabled}/${gate.source}`, 'false/cluster-metrics');
  });

  it('no cluster: the built-in default, off (the v1.35 behaviour tolerator describes)', () => {
    assert.equal(initialGates({}).PodLevelResourcesFixKubeletQOSClass.enabled, false);
  });
});

describe('clusterGate', () => {
  it('says what the cluster has whatever the flag: /metrics, else the version, else nothing', () => {
    const reading: ClusterGateReading = { metrics: new Map([['TaintTolerationComparisonOperators', true]]), version: v(35) };
    assert.equal(clusterGate('TaintTolerationComparisonOperators', reading)?.source, 'cluster-metrics');
    assert.equal(clusterGate('PodLevelResources', reading)?.source, 'cluster-version');
    assert.equal(clusterGate('PodLevelResources', nothing), undefined);
  });
});

describe('gateValues', () => {
  it('is the plain FeatureGates value the pure code receives', () => {
    assert.deepEqual(gateValues(initialGates({ PodLevelResources: false })), {
      TaintTolerationComparisonOperators: false,
      PodLevelResources: false,
      PodLevelResourcesFixKubeletQOSClass: false,
      DRADeviceTaints: false,
      DRADeviceTaintRules: false,
    });
  });
});
