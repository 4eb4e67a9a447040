/**
 * `spec.runtimeClasses` (src/tenancy/runtime-classes.ts): how the allow-list loads, and the audit's
 * `runtimeclass-pattern`, a RuntimeClass whose scheduling reaches a group's nodes without being
 * listed for that group, reported by name in the audit's findings and policy reports.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { stringify } from 'yaml';
import { defaultFeatureGates } from '../../src/api/feature-gates.js';
import { auditNodeSide, auditRuleNames, type AuditSettings } from '../../src/audit/audit-rules.js';
import { AuditCollector } from '../../src/audit/audit-summary.js';
import { buildPolicyReports, reportApis } from '../../src/audit/policy-reports.js';
import { allPluginNames, type PluginName } from '../../src/plugins/registry.js';
import { parseClusterState } from '../../src/kube/cluster-state-file.js';
import { parsePolicyFile } from '../../src/tenancy/policy-directory.js';
import { createPolicySet } from '../../src/tenancy/policy-set.js';
import { formatPolicyLoadError } from '../../src/tenancy/policy.js';
import { runtimeClassFindings } from '../../src/tenancy/runtime-classes.js';
import { recognizeTenancyPolicy } from '../../src/export/tenancy-cel.js';
import { compilePolicy, labelPolicySpec, policyDocument } from './tenancy-fixtures.js';

function loadErrors(runtimeClasses: unknown): string[] {
  return parsePolicyFile('policies/p.yaml', stringify(policyDocument('p', { ...labelPolicySpec(), runtimeClasses }))).errors.map(
    formatPolicyLoadError,
  );
}

describe('RuntimeClass allow-list: spec.runtimeClasses loads as a mapping of group to RuntimeClass names', () => {
  it('loads a group to names mapping, a name under several groups allowed to each', () => {
    const policy = compilePolicy('p', { ...labelPolicySpec(), runtimeClasses: { pci: ['kata-pci', 'gvisor'], gpu: ['gvisor'] } });
    assert.deepEqual([...(policy.runtimeClasses.groupsByName.get('gvisor') ?? [])], ['pci', 'gpu']);
    assert.deepEqual(policy.runtimeClasses.namesByGroup.get('pci'), ['kata-pci', 'gvisor']);
    assert.equal(policy.runtimeClasses.namesByGroup.has('web'), false);
  });

  it('export refuses a policy with spec.runtimeClasses rather than write admission policies that do not check it', () => {
    const exportable = { ...labelPolicySpec(), exempt: "namespaceObject.metadata.?labels['x'].orValue('') == 'true'" };
    assert.ok(!('reason' in recognizeTenancyPolicy(compilePolicy('p', exportable))));
    const refused = recognizeTenancyPolicy(compilePolicy('p', { ...exportable, runtimeClasses: { pci: ['kata-pci'] } }));
    assert.match('reason' in refused ? refused.reason : '', /^not exported: spec\.runtimeClasses; .* Keep the webhook for this policy$/);
  });

  it('a policy without it lists nothing', () => {
    assert.equal(compilePolicy('p').runtimeClasses.groupsByName.size, 0);
  });

  const refused: { name: string; given: unknown; want: RegExp }[] = [
    {
      name: 'a list instead of a mapping',
      given: ['kata'],
      want: /spec\.runtimeClasses: must be a mapping of group to a list of RuntimeClass names/,
    },
    { name: 'an empty list', given: { pci: [] }, want: /spec\.runtimeClasses\.pci: must be a non-empty list of RuntimeClass names/ },
    {
      name: 'a name that is no RuntimeClass name',
      given: { pci: ['Kata_PCI'] },
      want: /spec\.runtimeClasses\.pci\.0: must be a RuntimeClass name \(a lowercase RFC 1123 subdomain of at most 253 characters\), got "Kata_PCI"/,
    },
    { name: 'a number', given: { pci: [7] }, want: /spec\.runtimeClasses\.pci\.0: must be a RuntimeClass name .*got a number/ },
    {
      name: 'a group that is no label value',
      given: { 'p c i': ['kata'] },
      want: /spec\.runtimeClasses\.p c i: the group "p c i" is not a valid group/,
    },
  ];
  for (const row of refused) {
    it(`refuses ${row.name}, naming the field`, () => {
      const errors = loadErrors(row.given);
      assert.ok(
        errors.some((error) => row.want.test(error)),
        errors.join('\n'),
      );
    });
  }
});

const policy = compilePolicy('by-label', { ...labelPolicySpec(), runtimeClasses: { pci: ['kata-pci'] } });

function runtimeClass(name: string, scheduling?: unknown): Record<string, unknown> {
  return {
    apiVersion: 'node.k8s.io/v1',
    kind: 'RuntimeClass',
    metadata: { name },
    handler: 'kata',
    ...(scheduling === undefined ? {} : { scheduling }),
  };
}

const pciToleration = { key: 'dedicated', operator: 'Equal', value: 'pci', effect: 'NoSchedule' };

describe("runtimeclass-pattern: a RuntimeClass whose scheduling reaches a group's nodes without being listed for it", () => {
  const rows: { name: string; given: Record<string, unknown>; fields: string[] }[] = [
    {
      name: "a RuntimeClass listed for pci, scheduling onto pci's nodes, is fine",
      given: runtimeClass('kata-pci', { nodeSelector: { dedicated: 'pci' }, tolerations: [pciToleration] }),
      fields: [],
    },
    {
      name: "an unlisted RuntimeClass selecting pci's nodes and tolerating pci's taint is reported on both fields",
      given: runtimeClass('kata-fast', { nodeSelector: { dedicated: 'pci' }, tolerations: [pciToleration] }),
      fields: ['scheduling.nodeSelector[dedicated]', 'scheduling.tolerations[0]'],
    },
    {
      name: "a RuntimeClass listed for pci that tolerates every group's taint (Exists) is reported",
      given: runtimeClass('kata-pci', { tolerations: [{ key: 'dedicated', operator: 'Exists' }] }),
      fields: ['scheduling.tolerations[0]'],
    },
    {
      name: "a RuntimeClass listed for pci that selects gpu's nodes is reported",
      given: runtimeClass('kata-pci', { nodeSelector: { dedicated: 'gpu' } }),
      fields: ['scheduling.nodeSelector[dedicated]'],
    },
    { name: 'a RuntimeClass without scheduling is fine', given: runtimeClass('gvisor'), fields: [] },
    {
      name: 'a RuntimeClass whose scheduling reaches no group (another key, another taint) is fine',
      given: runtimeClass('arm', { nodeSelector: { 'kubernetes.io/arch': 'arm64' }, tolerations: [{ key: 'arch', operator: 'Exists' }] }),
      fields: [],
    },
    {
      name: 'a hand-written RuntimeClass with fields of the wrong type is read as far as it can be',
      given: runtimeClass('broken', { nodeSelector: 'dedicated=pci', tolerations: [7, { key: 3 }] }),
      fields: [],
    },
  ];
  for (const row of rows) {
    it(row.name, () => {
      assert.deepEqual(
        runtimeClassFindings(row.given, [policy]).map(({ field }) => field),
        row.fields,
      );
    });
  }

  it('the finding names the RuntimeClass, what it reaches and the policy', () => {
    const [finding] = runtimeClassFindings(runtimeClass('kata-fast', { tolerations: [pciToleration] }), [policy]);
    assert.match(
      finding?.message ?? '',
      /^RuntimeClass "kata-fast" scheduling\.tolerations\[0\] tolerates the dedicated taint of group "pci" but is listed for no group in spec\.runtimeClasses \(policy "by-label"\)/,
    );
  });

  const settings: AuditSettings = {
    gates: defaultFeatureGates,
    enabled: new Set<PluginName>(allPluginNames),
    policies: createPolicySet([policy]).set,
    exclusion: { names: new Set(), label: { key: 'tolerator.dev/ignore', value: 'true' } },
    all: false,
  };

  it("is one of the audit's rules, reported by RuntimeClass name, cluster-scoped, and in the cluster-wide policy report", () => {
    assert.ok(auditRuleNames.includes('runtimeclass-pattern'));
    const found = auditNodeSide([], [], settings, [
      runtimeClass('kata-fast', { nodeSelector: { dedicated: 'pci' } }),
      runtimeClass('kata-pci', { nodeSelector: { dedicated: 'pci' } }),
    ]);
    assert.deepEqual(
      found.map(({ namespace, name, kind, rule, policy: named }) => ({ namespace, name, kind, rule, policy: named })),
      [{ namespace: '', name: 'kata-fast', kind: 'RuntimeClass', rule: 'runtimeclass-pattern', policy: 'by-label' }],
    );
    const collector = new AuditCollector();
    collector.addClusterFindings(found);
    const [api] = reportApis;
    assert.ok(api !== undefined);
    const report = buildPolicyReports(api, collector.result(), () => 'Deny', new Date(0)).get('');
    assert.match(
      JSON.stringify(report?.results),
      /"resources":\[\{"apiVersion":"node.k8s.io\/v1","kind":"RuntimeClass","name":"kata-fast"\}\]/,
    );
  });

  it('the --cluster-state file reads RuntimeClasses and RuntimeClassLists, as the informer keeps them', () => {
    const state = parseClusterState(
      stringify({
        apiVersion: 'node.k8s.io/v1',
        kind: 'RuntimeClassList',
        items: [
          {
            metadata: { name: 'kata-pci', managedFields: [{}] },
            handler: 'kata',
            scheduling: { nodeSelector: { dedicated: 'pci' }, tolerations: [pciToleration] },
          },
        ],
      }),
      'cluster.yaml',
    );
    assert.deepEqual(state.warnings, []);
    assert.deepEqual(state.runtimeClasses, [
      {
        apiVersion: 'node.k8s.io/v1',
        kind: 'RuntimeClass',
        metadata: { name: 'kata-pci' },
        scheduling: { nodeSelector: { dedicated: 'pci' }, tolerations: [pciToleration] },
      },
    ]);
  });
});
