/**
 * The gate defaults by Kubernetes version (pkg/features/kube_features.go,
 * defaultVersionedKubernetesFeatureGates) and the version read from `/version`, as managed and
 * self-built control planes report it.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  defaultAtVersion,
  defaultGatesAtVersion,
  featureGateHistoryCheckedThrough,
  parseKubernetesVersion,
  type KubernetesVersion,
} from '../../src/api/feature-gate-history.js';
import type { FeatureGateName } from '../../src/api/feature-gates.js';

describe('defaultAtVersion', () => {
  const rows: [FeatureGateName, string, { enabled: boolean; stage: string; beyondTable: boolean }][] = [
    ['TaintTolerationComparisonOperators', '1.34', { enabled: false, stage: 'absent', beyondTable: false }],
    ['TaintTolerationComparisonOperators', '1.35', { enabled: false, stage: 'ALPHA', beyondTable: false }],
    ['TaintTolerationComparisonOperators', '1.37', { enabled: false, stage: 'ALPHA', beyondTable: false }],
    ['TaintTolerationComparisonOperators', '1.40', { enabled: false, stage: 'ALPHA', beyondTable: true }],
    ['PodLevelResources', '1.30', { enabled: false, stage: 'absent', beyondTable: false }],
    ['PodLevelResources', '1.31', { enabled: false, stage: 'absent', beyondTable: false }],
    ['PodLevelResources', '1.32', { enabled: false, stage: 'ALPHA', beyondTable: false }],
    ['PodLevelResources', '1.33', { enabled: false, stage: 'ALPHA', beyondTable: false }],
    ['PodLevelResources', '1.34', { enabled: true, stage: 'BETA', beyondTable: false }],
    ['PodLevelResources', '1.35', { enabled: true, stage: 'BETA', beyondTable: false }],
    ['PodLevelResources', '2.0', { enabled: true, stage: 'BETA', beyondTable: true }],
    ['PodLevelResources', '0.9', { enabled: false, stage: 'absent', beyondTable: false }],
  ];
  for (const [gate, version, expected] of rows) {
    it(`${gate} at ${version}: ${expected.stage}, ${expected.enabled ? 'on' : 'off'}${expected.beyondTable ? ', newer than the table' : ''}`, () => {
      const [major, minor] = version.split('.').map(Number) as [number, number];
      assert.deepEqual(defaultAtVersion(gate, { major, minor }), expected);
    });
  }

  it('the table is checked through 1.37: that version is not beyond it, the next one is', () => {
    assert.deepEqual(featureGateHistoryCheckedThrough, { major: 1, minor: 37 });
    assert.equal(defaultAtVersion('PodLevelResources', { major: 1, minor: 37 }).beyondTable, false);
    assert.equal(defaultAtVersion('PodLevelResources', { major: 1, minor: 38 }).beyondTable, true);
  });
});

describe('defaultGatesAtVersion', () => {
  it("is every gate's default at the version, as a server of that version runs without --feature-gates", () => {
    const gates = (minor: number) => defaultGatesAtVersion({ major: 1, minor });
    assert.deepEqual(gates(35), {
      TaintTolerationComparisonOperators: false,
      PodLevelResources: true,
      PodLevelResourcesFixKubeletQOSClass: false,
      DRADeviceTaints: false,
      DRADeviceTaintRules: false,
    });
    assert.deepEqual(gates(36), {
      TaintTolerationComparisonOperators: false,
      PodLevelResources: true,
      PodLevelResourcesFixKubeletQOSClass: false,
      DRADeviceTaints: true,
      DRADeviceTaintRules: false,
    });
    assert.deepEqual(gates(37), {
      TaintTolerationComparisonOperators: false,
      PodLevelResources: true,
      PodLevelResourcesFixKubeletQOSClass: true,
      DRADeviceTaints: true,
      DRADeviceTaintRules: true,
    });
    assert.deepEqual(gates(33), {
      TaintTolerationComparisonOperators: false,
      PodLevelResources: false,
      PodLevelResourcesFixKubeletQOSClass: false,
      DRADeviceTaints: false,
      DRADeviceTaintRules: false,
    });
  });
});

describe('parseKubernetesVersion', () => {
  const rows: [string, unknown, KubernetesVersion | undefined][] = [
    ['upstream', { major: '1', minor: '35', gitVersion: 'v1.35.2' }, { major: 1, minor: 35 }],
    ['EKS', { major: '1', minor: '35', gitVersion: 'v1.35.2-eks-4a7b1c3' }, { major: 1, minor: 35 }],
    ['GKE: minor with a +', { major: '1', minor: '34+', gitVersion: 'v1.34.1-gke.1014001' }, { major: 1, minor: 34 }],
    ['k3s', { major: '1', minor: '33', gitVersion: 'v1.33.4+k3s1' }, { major: 1, minor: 33 }],
    ['a pre-release', { gitVersion: 'v1.36.0-alpha.1.123+abcdef' }, { major: 1, minor: 36 }],
    ['no leading v', { gitVersion: '1.35.0' }, { major: 1, minor: 35 }],
    ['gitVersion wins over major and minor', { major: '1', minor: '30', gitVersion: 'v1.35.0' }, { major: 1, minor: 35 }],
    ['no gitVersion: major and minor', { major: '1', minor: '32+' }, { major: 1, minor: 32 }],
    [
      'gitVersion unreadable: major and minor',
      { major: '1', minor: '31', gitVersion: 'v0.0.0-master+$Format:%H$' },
      { major: 1, minor: 31 },
    ],
    ['a development build with nothing else', { gitVersion: 'v0.0.0-master+$Format:%H$', major: '', minor: '' }, undefined],
    ['gitVersion without a minor', { gitVersion: 'v1' }, undefined],
    ['gitVersion with a non-digit minor', { gitVersion: 'v1.x' }, undefined],
    ['minor with other text', { major: '1', minor: '35-eks' }, undefined],
    ['an overlong number', { gitVersion: 'v1.123456789012345678901234567890' }, undefined],
    ['an overlong major', { major: '100000', minor: '1' }, undefined],
    ['numbers instead of strings', { major: 1, minor: 35 }, undefined],
    ['not an object', 'v1.35.2', undefined],
    ['null', null, undefined],
    ['an array', ['v1.35.2'], undefined],
  ];
  for (const [name, info, expected] of rows) {
    it(`${name}: ${expected === undefined ? 'no version' : `${expected.major}.${expected.minor}`}`, () => {
      assert.deepEqual(parseKubernetesVersion(info), expected);
    });
  }
});
