/**
 * The audit of allocated DRA claims (rule `foreign-device-toleration`): a ResourceClaim whose
 * allocation used a toleration of another group's device taint, in the audit's table, JSON and
 * PolicyReports.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { defaultFeatureGates } from '../../src/api/feature-gates.js';
import type { JsonObject } from '../../src/api/types.js';
import { auditClaim, type AuditSettings } from '../../src/audit/audit-rules.js';
import { allPluginNames, type PluginName } from '../../src/plugins/registry.js';
import { createPolicySet } from '../../src/tenancy/policy-set.js';
import { compilePolicy, labelPolicySpec, namespace, policyDocument } from '../tenancy/tenancy-fixtures.js';
import { audit, stateFile } from '../support/audit-command.js';

const key = 'gpu.example.com/dedicated';
const deviceSpec = { ...labelPolicySpec(), deviceTaint: { key, effect: 'NoSchedule' } };
const policy = compilePolicy('gpus', deviceSpec);

function settings(overrides: Partial<AuditSettings> = {}): AuditSettings {
  return {
    gates: defaultFeatureGates,
    enabled: new Set<PluginName>(allPluginNames),
    policies: createPolicySet([policy]).set,
    exclusion: { names: new Set(['kube-system']), label: undefined },
    all: false,
    ...overrides,
  };
}

function allocatedClaim(name: string, ns: string, tolerations: unknown[] | undefined): JsonObject {
  return {
    apiVersion: 'resource.k8s.io/v1',
    kind: 'ResourceClaim',
    metadata: { name, namespace: ns },
    spec: {
      devices: {
        requests: [{ name: 'gpu', exactly: { deviceClassName: 'gpu.example.com', ...(tolerations === undefined ? {} : { tolerations }) } }],
      },
    },
    ...(tolerations === undefined
      ? {}
      : {
          status: {
            allocation: {
              devices: { results: [{ request: 'gpu', driver: 'gpu.example.com', pool: 'worker-a', device: 'gpu-b-0', tolerations }] },
            },
          },
        }),
  };
}

const teamA = namespace('team-a', { dedicated: 'a' });

describe("audit rule foreign-device-toleration: an allocated claim that tolerates another group's device taint", () => {
  it("a claim allocated with a toleration of group b's device taint, in group a's namespace, is a finding naming the device", () => {
    const found = auditClaim(
      allocatedClaim('stolen', 'team-a', [{ key, operator: 'Equal', value: 'b', effect: 'NoSchedule' }]),
      teamA,
      settings(),
    );
    assert.equal(found.length, 1);
    assert.deepEqual(
      { ...found[0], message: undefined },
      {
        namespace: 'team-a',
        name: 'stolen',
        kind: 'ResourceClaim',
        node: '',
        rule: 'foreign-device-toleration',
        policy: 'gpus',
        message: undefined,
      },
    );
    assert.match(
      found[0]!.message,
      /^status\.allocation\.devices\.results\[0\] \(device gpu\.example\.com\/worker-a\/gpu-b-0\)\.tolerations\[0\] tolerates the device taint of group "b" \(gpu\.example\.com\/dedicated=<group>:NoSchedule, policy "gpus"\); namespace "team-a" belongs to group "a", and only an infrastructure namespace may reach other groups' devices/,
    );
  });

  it("the own group's toleration, an unallocated claim, an infrastructure namespace, an excluded one: no finding", () => {
    assert.deepEqual(
      auditClaim(allocatedClaim('own', 'team-a', [{ key, operator: 'Equal', value: 'a', effect: 'NoSchedule' }]), teamA, settings()),
      [],
    );
    const unallocated = { ...allocatedClaim('pending', 'team-a', [{ operator: 'Exists' }]), status: {} };
    assert.deepEqual(auditClaim(unallocated, teamA, settings()), []);
    const infrastructure = namespace('gpu-operator', { 'tolerator.dev/node-infrastructure': 'true' });
    assert.deepEqual(auditClaim(allocatedClaim('agent', 'gpu-operator', [{ operator: 'Exists' }]), infrastructure, settings()), []);
    assert.deepEqual(auditClaim(allocatedClaim('sys', 'kube-system', [{ operator: 'Exists' }]), namespace('kube-system'), settings()), []);
    assert.equal(
      auditClaim(allocatedClaim('sys', 'kube-system', [{ operator: 'Exists' }]), namespace('kube-system'), settings({ all: true })).length,
      1,
    );
  });

  it("judged by the namespace as it is now: a claim made in group a is a finding once its namespace is group b's", () => {
    const claim = allocatedClaim('moved', 'team-a', [{ key, operator: 'Equal', value: 'a', effect: 'NoSchedule' }]);
    assert.equal(auditClaim(claim, namespace('team-a', { dedicated: 'b' }), settings()).length, 1);
  });

  it('DedicatedNodes disabled, or no policy with deviceTaint: nothing', () => {
    const claim = allocatedClaim('stolen', 'team-a', [{ operator: 'Exists' }]);
    assert.deepEqual(
      auditClaim(claim, teamA, settings({ enabled: new Set<PluginName>(allPluginNames.filter((n) => n !== 'DedicatedNodes')) })),
      [],
    );
    assert.deepEqual(auditClaim(claim, teamA, settings({ policies: createPolicySet([compilePolicy('nodes')]).set })), []);
  });
});

describe('tolerator audit reports allocated claims in its table, JSON and PolicyReports', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tolerator-audit-claims-'));
  after(() => {
    rmSync(dir, { recursive: true, force: true });
  });
  writeFileSync(join(dir, 'gpus.yaml'), stringify(policyDocument('gpus', deviceSpec)));
  const state = JSON.stringify({
    apiVersion: 'v1',
    kind: 'List',
    items: [
      teamA,
      {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'p', namespace: 'team-a' },
        spec: {
          containers: [{ name: 'c', image: 'i' }],
          tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'a', effect: 'NoSchedule' }],
          affinity: {
            nodeAffinity: {
              requiredDuringSchedulingIgnoredDuringExecution: {
                nodeSelectorTerms: [{ matchExpressions: [{ key: 'dedicated', operator: 'In', values: ['a'] }] }],
              },
            },
          },
        },
      },
      allocatedClaim('stolen', 'team-a', [{ key, operator: 'Exists', effect: 'NoSchedule' }]),
      allocatedClaim('fine', 'team-a', [{ key, operator: 'Equal', value: 'a', effect: 'NoSchedule' }]),
    ],
  });
  const flags = ['--cluster-state', stateFile, '--policies', dir, '--rule', 'foreign-device-toleration'];

  it('the table names resourceclaim/stolen and counts it', async () => {
    const { code, stdout } = await audit(flags, { [stateFile]: state });
    assert.equal(code, 1, stdout);
    assert.match(stdout, /^team-a\s+resourceclaim\/stolen\s+<none>\s+foreign-device-toleration\s+status\.allocation/m);
    assert.match(stdout, /1 violations in 0 of 1 pods audited and 1 ResourceClaims\.\n$/);
  });

  it("-n NAMESPACE on a file audits that namespace's claims only", async () => {
    const other = await audit([...flags, '-n', 'team-b'], { [stateFile]: state });
    assert.equal(other.code, 0, other.stdout);
    assert.doesNotMatch(other.stdout, /resourceclaim\/stolen/);
    const own = await audit([...flags, '-n', 'team-a'], { [stateFile]: state });
    assert.equal(own.code, 1, own.stdout);
    assert.match(own.stdout, /^team-a\s+resourceclaim\/stolen\s/m);
  });

  it('a claim whose namespace the policy cannot be evaluated for: could not judge ResourceClaim, exit 2', async () => {
    const broken = join(dir, 'broken');
    mkdirSync(broken, { recursive: true });
    // No optional: a namespace without the label is an evaluation error, not "no group".
    writeFileSync(
      join(broken, 'gpus.yaml'),
      stringify(policyDocument('gpus', { ...deviceSpec, group: "namespaceObject.metadata.labels['dedicated']" })),
    );
    const unlabelled = JSON.stringify({
      apiVersion: 'v1',
      kind: 'List',
      items: [
        namespace('plain'),
        { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', namespace: 'team-a' }, spec: { containers: [{ name: 'c', image: 'i' }] } },
        allocatedClaim('orphan', 'plain', [{ key, operator: 'Exists', effect: 'NoSchedule' }]),
      ],
    });
    const { code, stderr } = await audit(['--cluster-state', stateFile, '--policies', broken, '--rule', 'foreign-device-toleration'], {
      [stateFile]: unlabelled,
    });
    assert.equal(code, 2, stderr);
    assert.match(stderr, /^tolerator audit: could not judge ResourceClaim "plain\/orphan": /m);
  });

  it('JSON: the violation with kind ResourceClaim', async () => {
    const { stdout } = await audit([...flags, '-o', 'json'], { [stateFile]: state });
    const parsed = JSON.parse(stdout) as {
      violations: { kind?: string; name: string; rule: string }[];
      summary: { byRule: Record<string, number> };
    };
    assert.deepEqual(
      parsed.violations.map(({ kind, name, rule }) => ({ kind, name, rule })),
      [{ kind: 'ResourceClaim', name: 'stolen', rule: 'foreign-device-toleration' }],
    );
    assert.equal(parsed.summary.byRule['foreign-device-toleration'], 1);
  });

  it("PolicyReports: a result about the ResourceClaim, in the namespace's report, category Dedicated devices", async () => {
    const { stdout } = await audit([...flags, '-o', 'yaml'], { [stateFile]: state });
    assert.match(stdout, /kind: PolicyReport\n/);
    assert.match(stdout, /category: Dedicated devices/);
    assert.match(
      stdout,
      /resources:\n\s+- apiVersion: resource\.k8s\.io\/v1\n\s+kind: ResourceClaim\n\s+namespace: team-a\n\s+name: stolen/,
    );
  });
});
