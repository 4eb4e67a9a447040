/**
 * The audit of allocated claims agrees with admission: a ResourceClaim the device half of
 * DedicatedNodes admits, allocated with exactly its request's tolerations (the allocator copies
 * them into `status.allocation.devices.results[i].tolerations`), is never a
 * `foreign-device-toleration` finding while its namespace keeps its group; and one it refuses is
 * always a finding. Tolerations are generated over every form the allocator's ToleratesTaint reads
 * (an empty or other key, each operator, the group values, an empty or other effect), in a
 * namespace of group a, of no group, and an infrastructure one.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { defaultFeatureGates } from '../../src/api/feature-gates.js';
import type { JsonObject } from '../../src/api/types.js';
import { auditClaim, type AuditSettings } from '../../src/audit/audit-rules.js';
import { createDedicatedNodes } from '../../src/plugins/dedicated-nodes.js';
import { allPluginNames, type PluginName } from '../../src/plugins/registry.js';
import { createPolicySet } from '../../src/tenancy/policy-set.js';
import { admissionAttributes, pluginContext } from '../support/plugin-inputs.js';
import { compilePolicy, labelPolicySpec, namespace } from '../tenancy/tenancy-fixtures.js';

const key = 'gpu.example.com/dedicated';
const policy = compilePolicy('gpus', { ...labelPolicySpec(), deviceTaint: { key, effect: 'NoSchedule' } });
const set = createPolicySet([policy]).set;
const plugin = createDedicatedNodes(() => set);
const settings: AuditSettings = {
  gates: defaultFeatureGates,
  enabled: new Set<PluginName>(allPluginNames),
  policies: set,
  exclusion: { names: new Set(), label: undefined },
  all: false,
};
const namespaces = [
  namespace('team-a', { dedicated: 'a' }),
  namespace('shared'),
  namespace('agents', { 'tolerator.dev/node-infrastructure': 'true' }),
];

const optional = <T>(values: readonly T[]): fc.Arbitrary<T | undefined> => fc.option(fc.constantFrom(...values), { nil: undefined });
const toleration = fc.record(
  {
    key: optional(['', key, 'example.com/other']),
    operator: optional(['Equal', 'Exists', '']),
    value: optional(['', 'a', 'b']),
    effect: optional(['', 'NoSchedule', 'NoExecute', 'None']),
  },
  { requiredKeys: [] },
);

describe('the audit of allocated claims agrees with device-tenancy admission', () => {
  it('admitted ⇔ no foreign-device-toleration finding, for every toleration form and namespace', () => {
    fc.assert(
      fc.property(fc.array(toleration, { maxLength: 4 }), fc.nat({ max: namespaces.length - 1 }), (tolerations, which) => {
        const ns = namespaces[which]!;
        const name = ns.metadata.name;
        const claim: JsonObject = {
          apiVersion: 'resource.k8s.io/v1',
          kind: 'ResourceClaim',
          metadata: { name: 'c', namespace: name },
          spec: { devices: { requests: [{ name: 'gpu', exactly: { deviceClassName: 'x', tolerations } }] } },
        };
        const attributes = admissionAttributes(
          { group: 'resource.k8s.io', resource: 'resourceclaims', kind: 'ResourceClaim' },
          'CREATE',
          claim,
        );
        const admitted =
          plugin.validate(claim, attributes, pluginContext({ namespace: ns, gates: { DRADeviceTaints: true } })).denial === undefined;
        const allocated: JsonObject = {
          ...claim,
          status: { allocation: { devices: { results: [{ request: 'gpu', driver: 'd', pool: 'p', device: 'g', tolerations }] } } },
        };
        const findings = auditClaim(allocated, ns, settings);
        assert.equal(findings.length === 0, admitted, JSON.stringify({ name, tolerations, findings }));
      }),
      { numRuns: 2000 },
    );
  });
});
