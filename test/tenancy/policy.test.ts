import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { stringify } from 'yaml';
import { parsePolicyFile } from '../../src/tenancy/policy-directory.js';
import { formatPolicyLoadError } from '../../src/tenancy/policy.js';
import { createPolicyEvaluator } from '../../src/tenancy/policy-set.js';
import { examplePolicy, labelPolicySpec, namespace, pod, policyDocument } from './tenancy-fixtures.js';

function loadErrors(spec: Record<string, unknown>, document: Record<string, unknown> = policyDocument('p', spec)): string[] {
  return parsePolicyFile('policies/p.yaml', stringify(document)).errors.map(formatPolicyLoadError);
}

describe('parseTenancyPolicy', () => {
  it('loads the label policy with every field', () => {
    const loaded = parsePolicyFile('policies/p.yaml', stringify(policyDocument('p', labelPolicySpec())));
    assert.deepEqual(loaded.errors, []);
    const policy = loaded.policies[0];
    assert.deepEqual(
      {
        name: policy?.name,
        file: policy?.file,
        taint: policy?.taint,
        nodeLabel: policy?.nodeLabel,
        enforcement: policy?.enforcement,
        hasExempt: policy?.exempt !== undefined,
      },
      {
        name: 'p',
        file: 'policies/p.yaml',
        taint: { key: 'dedicated', effect: 'NoSchedule' },
        nodeLabel: 'dedicated',
        enforcement: 'Deny',
        hasExempt: true,
      },
    );
  });

  it('defaults enforcement to Deny and leaves optional expressions out', () => {
    const spec = labelPolicySpec();
    delete spec.enforcement;
    delete spec.exempt;
    delete spec.infrastructure;
    const policy = parsePolicyFile('p.yaml', stringify(policyDocument('p', spec))).policies[0];
    assert.deepEqual(
      { enforcement: policy?.enforcement, exempt: policy?.exempt, infrastructure: policy?.infrastructure },
      { enforcement: 'Deny', exempt: undefined, infrastructure: undefined },
    );
  });

  const rows: { name: string; given: Record<string, unknown>; want: RegExp }[] = [
    {
      name: 'a taint key that is not a qualified name is refused',
      given: { ...labelPolicySpec(), taint: { key: 'bad key', effect: 'NoSchedule' } },
      want: /spec\.taint\.key: must be a qualified name: name part must consist/,
    },
    {
      name: 'a taint effect outside the two that repel is refused',
      given: { ...labelPolicySpec(), taint: { key: 'dedicated', effect: 'NoSchedul' } },
      want: /spec\.taint\.effect: unsupported value "NoSchedul": supported values are NoSchedule, NoExecute/,
    },
    {
      // kube-scheduler only scores an untolerated PreferNoSchedule taint (TaintToleration's Score),
      // and Karpenter's relaxation tolerates it (preferences.go toleratePreferNoScheduleTaints):
      // every pod of the cluster could still run on the group's nodes.
      name: 'a PreferNoSchedule group taint is refused: it keeps no pod off the group nodes',
      given: { ...labelPolicySpec(), taint: { key: 'dedicated', effect: 'PreferNoSchedule' } },
      want: /spec\.taint\.effect: unsupported value "PreferNoSchedule": supported values are NoSchedule, NoExecute \(PreferNoSchedule repels no pod/,
    },
    {
      name: 'a taint value is refused because the group is the value',
      given: { ...labelPolicySpec(), taint: { key: 'dedicated', value: 'x', effect: 'NoSchedule' } },
      want: /spec\.taint\.value: must not be set: the taint value is the group/,
    },
    {
      name: 'a node label that is not a label key is refused',
      given: { ...labelPolicySpec(), nodeLabel: 'example.com/' },
      want: /spec\.nodeLabel: must be a valid label key: name part must be non-empty/,
    },
    {
      name: 'a node label with an upper-case prefix is refused',
      given: { ...labelPolicySpec(), nodeLabel: 'Example.com/x' },
      want: /spec\.nodeLabel: must be a valid label key: prefix part/,
    },
    {
      name: 'an enforcement other than Deny or Warn is refused',
      given: { ...labelPolicySpec(), enforcement: 'Audit' },
      want: /spec\.enforcement: unsupported value "Audit": supported values are Deny, Warn/,
    },
    {
      name: 'a misspelt field is refused rather than ignored',
      given: { ...labelPolicySpec(), exmpt: 'true' },
      want: /spec\.exmpt: unknown field/,
    },
    {
      name: 'a missing group is refused',
      given: { ...labelPolicySpec(), group: undefined },
      want: /spec\.group: required: a CEL expression/,
    },
    {
      name: 'a group that does not parse names the field and the position',
      given: { ...labelPolicySpec(), group: "namespaceObject.metadata.labels['a'" },
      want: /^policies\/p\.yaml:\d+: TenancyPolicy "p": spec\.group: line 1, column 36 of the expression: /,
    },
    {
      name: 'an exempt rule of the wrong type is refused at load',
      given: { ...labelPolicySpec(), exempt: "object.metadata.name + 'x'" },
      want: /spec\.exempt: line 1, column 1 of the expression: must evaluate to bool, but its type is string/,
    },
    {
      name: 'an infrastructure rule using an undeclared variable is refused at load',
      given: { ...labelPolicySpec(), infrastructure: 'params.enabled == true' },
      want: /spec\.infrastructure: line 1, column 1 of the expression: Unknown variable: params/,
    },
  ];
  for (const row of rows) {
    it(row.name, () => {
      const errors = loadErrors(row.given);
      assert.ok(
        errors.some((error) => row.want.test(error)),
        errors.join('\n'),
      );
    });
  }

  it('reports every problem of a document, not only the first', () => {
    const errors = loadErrors({ ...labelPolicySpec(), nodeLabel: 'a b', enforcement: 'x', taint: { key: 'k', effect: 'y' } });
    assert.deepEqual(errors.map((error) => /: (spec\.[a-zA-Z.]+):/.exec(error)?.[1]).sort(), [
      'spec.enforcement',
      'spec.nodeLabel',
      'spec.taint.effect',
    ]);
  });

  it('refuses another apiVersion and a missing name', () => {
    const errors = loadErrors({}, { apiVersion: 'v1', kind: 'TenancyPolicy', metadata: {}, spec: labelPolicySpec() });
    assert.deepEqual(errors.map((error) => /: (apiVersion|metadata\.name):/.exec(error)?.[1]).sort(), ['apiVersion', 'metadata.name']);
  });

  it('gives the line of the offending field in the file', () => {
    const text = [
      'apiVersion: tolerator.dev/v1alpha1',
      'kind: TenancyPolicy',
      'metadata: { name: p }',
      'spec:',
      '  taint: { key: dedicated, effect: NoSchedule }',
      '  nodeLabel: dedicated',
      '  group: |-',
      "    namespaceObject.metadata.name == 'a'",
      "      ? 'a' +",
      "      : ''",
    ].join('\n');
    const error = parsePolicyFile('policies/p.yaml', text).errors[0];
    assert.deepEqual(
      { line: error?.line, field: error?.field, expressionLine: error?.expressionPosition?.line },
      { line: 7, field: 'spec.group', expressionLine: 3 },
    );
  });
});

describe('the shipped example policies', () => {
  const label = examplePolicy('dedicated-by-namespace-label.yaml');
  const prefix = examplePolicy('dedicated-by-namespace-prefix.yaml');
  const rows: {
    name: string;
    given: { file: 'label' | 'prefix'; namespace: ReturnType<typeof namespace>; pod?: ReturnType<typeof pod>; groups?: string[] };
    want: { group: string; exempt: boolean; infrastructure: boolean };
  }[] = [
    {
      name: 'the label policy puts a namespace labelled dedicated=gpu in group gpu',
      given: { file: 'label', namespace: namespace('ml', { dedicated: 'gpu' }) },
      want: { group: 'gpu', exempt: false, infrastructure: false },
    },
    {
      name: 'the label policy leaves an unlabelled namespace without a group',
      given: { file: 'label', namespace: namespace('web') },
      want: { group: '', exempt: false, infrastructure: false },
    },
    {
      name: 'the label policy exempts the pods of a namespace labelled tolerator.dev/exempt=true',
      given: { file: 'label', namespace: namespace('ml-platform', { dedicated: 'gpu', 'tolerator.dev/exempt': 'true' }) },
      want: { group: 'gpu', exempt: true, infrastructure: false },
    },
    {
      name: 'the label policy does not exempt a pod labelled tolerator.dev/exempt=true: a tenant cannot exempt itself',
      given: {
        file: 'label',
        namespace: namespace('ml', { dedicated: 'gpu' }),
        pod: pod({}, { labels: { 'tolerator.dev/exempt': 'true' } }),
      },
      want: { group: 'gpu', exempt: false, infrastructure: false },
    },
    {
      name: 'the label policy recognises an infrastructure namespace by its label',
      given: { file: 'label', namespace: namespace('logging', { 'tolerator.dev/node-infrastructure': 'true' }) },
      want: { group: '', exempt: false, infrastructure: true },
    },
    {
      name: 'the prefix policy puts team-a-dev in group team-a',
      given: { file: 'prefix', namespace: namespace('team-a-dev') },
      want: { group: 'team-a', exempt: false, infrastructure: false },
    },
    {
      name: 'the prefix policy puts team-a itself in group team-a',
      given: { file: 'prefix', namespace: namespace('team-a') },
      want: { group: 'team-a', exempt: false, infrastructure: false },
    },
    {
      name: 'the prefix policy puts team-b-prod-eu in group team-b',
      given: { file: 'prefix', namespace: namespace('team-b-prod-eu') },
      want: { group: 'team-b', exempt: false, infrastructure: false },
    },
    {
      name: 'the prefix policy leaves teams-a without a group',
      given: { file: 'prefix', namespace: namespace('teams-a') },
      want: { group: '', exempt: false, infrastructure: false },
    },
    {
      name: 'the prefix policy leaves team--x without a group',
      given: { file: 'prefix', namespace: namespace('team--x') },
      want: { group: '', exempt: false, infrastructure: false },
    },
    {
      name: 'the prefix policy exempts a pod a member of platform-admins requests',
      given: { file: 'prefix', namespace: namespace('team-a'), groups: ['platform-admins', 'system:authenticated'] },
      want: { group: 'team-a', exempt: true, infrastructure: false },
    },
    {
      name: 'the prefix policy does not exempt a pod annotated tolerator.dev/exempt=true: a tenant cannot exempt itself',
      given: {
        file: 'prefix',
        namespace: namespace('team-a'),
        pod: pod({}, { annotations: { 'tolerator.dev/exempt': 'true' } }),
        groups: ['system:authenticated'],
      },
      want: { group: 'team-a', exempt: false, infrastructure: false },
    },
    {
      name: 'the prefix policy treats kube-system as infrastructure',
      given: { file: 'prefix', namespace: namespace('kube-system') },
      want: { group: '', exempt: false, infrastructure: true },
    },
  ];
  for (const row of rows) {
    it(row.name, () => {
      const policy = row.given.file === 'label' ? label : prefix;
      const userInfo = { username: 'someone', uid: '', groups: row.given.groups ?? [], extra: {} };
      const evaluator = createPolicyEvaluator({
        object: row.given.pod ?? pod(),
        oldObject: undefined,
        namespace: row.given.namespace,
        request: { operation: 'CREATE', userInfo },
      });
      assert.deepEqual(
        { group: evaluator.group(policy), exempt: evaluator.exempt(policy), infrastructure: evaluator.infrastructure(policy) },
        row.want,
      );
    });
  }
});

describe('a policy that lets tenants decide for themselves loads with a caution', () => {
  const policyText = (field: string, expression: string): string =>
    [
      'apiVersion: tolerator.dev/v1alpha1',
      'kind: TenancyPolicy',
      'metadata: { name: p }',
      'spec:',
      '  taint: { key: dedicated, effect: NoSchedule }',
      '  nodeLabel: dedicated',
      `  group: ${JSON.stringify(field === 'group' ? expression : "namespaceObject.metadata.?labels['dedicated'].orValue('')")}`,
      ...(field === 'group' ? [] : [`  ${field}: ${JSON.stringify(expression)}`]),
    ].join('\n');
  const rows: { name: string; field: string; expression: string; want: RegExp | undefined }[] = [
    {
      name: "exempt on the pod's own label",
      field: 'exempt',
      expression: "object.metadata.?labels['tolerator.dev/exempt'].orValue('') == 'true'",
      want: /^TenancyPolicy "p" spec\.exempt reads object\.metadata\.labels, which whoever creates the pod or workload writes: a tenant can exempt its own pods/,
    },
    {
      name: "exempt on the pod's annotation by index",
      field: 'exempt',
      expression: "object['metadata']['annotations']['x'] == 'y'",
      want: /spec\.exempt reads object\.metadata\.annotations,/,
    },
    {
      name: 'exempt on the old object',
      field: 'exempt',
      expression: 'has(oldObject.metadata.labels)',
      want: /reads oldObject\.metadata\.labels/,
    },
    {
      name: 'exempt on a computed label key',
      field: 'exempt',
      expression: "object.metadata.labels[request.userInfo.username] == 'x'",
      want: /reads object\.metadata\.labels/,
    },
    {
      name: "group on the pod's label",
      field: 'group',
      expression: "object.metadata.?labels['team'].orValue('')",
      want: /spec\.group reads object\.metadata\.labels, .*a tenant can choose its own group/,
    },
    {
      name: "infrastructure on the pod's service account",
      field: 'infrastructure',
      expression: "object.spec.?serviceAccountName.orValue('') == 'agent'",
      want: /spec\.infrastructure reads object\.spec\.serviceAccountName, .*reach every group's nodes/,
    },
    {
      name: 'exempt on the namespace label',
      field: 'exempt',
      expression: "namespaceObject.metadata.?labels['x'].orValue('') == 'true'",
      want: undefined,
    },
    {
      name: "exempt on the requesting user's groups",
      field: 'exempt',
      expression: "'platform-admins' in request.userInfo.groups",
      want: undefined,
    },
    {
      name: 'group on the namespace label the platform team sets',
      field: 'group',
      expression: "namespaceObject.metadata.?labels['dedicated'].orValue('')",
      want: undefined,
    },
    // Groups from namespace names (item 11 of the bounded-under-attack issue): whoever creates a
    // namespace chooses its name.
    {
      name: "group on the namespace's name",
      field: 'group',
      expression: "namespaceObject.metadata.name.startsWith('team-a') ? 'team-a' : ''",
      want: /^TenancyPolicy "p" spec\.group reads namespaceObject\.metadata\.name: the namespace's name, which whoever creates the namespace chooses\. Wherever users may create namespaces \(a self-provisioner role, hierarchical namespaces, Capsule\), anyone who may create a namespace can name it into any group/,
    },
    {
      name: "group on the pod's namespace (set by the API server from the request path, chosen by the namespace's creator)",
      field: 'group',
      expression: 'object.metadata.namespace',
      want: /spec\.group reads object\.metadata\.namespace: the namespace's name/,
    },
    {
      name: "infrastructure on the request's namespace",
      field: 'infrastructure',
      expression: "request.namespace == 'logging'",
      want: /spec\.infrastructure reads request\.namespace: .*can name it as infrastructure and reach every group's nodes/,
    },
    {
      name: 'exempt on the label the API server sets to the name',
      field: 'exempt',
      expression: "namespaceObject.metadata.labels['kubernetes.io/metadata.name'] == 'debug'",
      want: /spec\.exempt reads namespaceObject\.metadata\.labels\['kubernetes\.io\/metadata\.name'\]: .*its pods are exempt/,
    },
  ];
  for (const row of rows) {
    it(`${row.want === undefined ? 'no caution' : 'a caution'} for ${row.name}`, () => {
      const { policies, errors } = parsePolicyFile('p.yaml', policyText(row.field, row.expression));
      assert.deepEqual(errors, []);
      const cautions = policies[0]?.cautions ?? [];
      if (row.want === undefined) {
        assert.deepEqual(cautions, []);
      } else {
        assert.equal(cautions.length, 1);
        assert.match(cautions[0] ?? '', row.want);
      }
    });
  }

  it('the shipped label policy carries no caution', () => {
    assert.deepEqual(label().cautions, []);
  });

  it('groups from namespace names: the shipped prefix policy loads with the caution for its group and its infrastructure', () => {
    const cautions = prefix().cautions;
    assert.equal(cautions.length, 2, cautions.join('\n'));
    assert.match(
      cautions[0] ?? '',
      /spec\.group reads namespaceObject\.metadata\.name: .*anyone who may create a namespace can name it into any group/,
    );
    assert.match(cautions[1] ?? '', /spec\.infrastructure reads namespaceObject\.metadata\.name: .*reach every group's nodes/);
  });

  it('groups from namespace names: the threat model in docs/tenancy.md says so', () => {
    const guide = readFileSync(new URL('../../docs/tenancy.md', import.meta.url), 'utf8');
    const start = guide.indexOf('## Threat model');
    const model = guide.slice(start).replace(/\s+/g, ' ');
    assert.ok(start !== -1, 'docs/tenancy.md has a threat model');
    assert.match(model, /\*\*Namespaces that users create\*\*: .*self-provisioner role .*hierarchical namespaces .*Capsule/);
    assert.match(
      model,
      /`dedicated-by-namespace-prefix` does, then lets anyone create `team-a-x` and land on group team-a's nodes, or `logging` and reach every group's nodes/,
    );
  });

  it("groups from namespace names: the prefix policy's file says so where it takes the group", () => {
    const text = readFileSync(new URL('../../policies/dedicated-by-namespace-prefix.yaml', import.meta.url), 'utf8');
    assert.match(
      text.replace(/\n# ?/g, ' '),
      /the group and the infrastructure list come from the namespace's NAME, which whoever creates the namespace chooses/,
    );
    assert.match(
      text.replace(/\n# ?/g, ' '),
      /anyone can create `team-a-x` and land on group team-a's nodes, or `logging` and reach every group's nodes/,
    );
  });
  const label = (): ReturnType<typeof examplePolicy> => examplePolicy('dedicated-by-namespace-label.yaml');
  const prefix = (): ReturnType<typeof examplePolicy> => examplePolicy('dedicated-by-namespace-prefix.yaml');
});

describe('spec.nodePools: a group names its Karpenter NodePools', () => {
  it('loads a mapping of groups to NodePool names, more than one per group', () => {
    const loaded = parsePolicyFile(
      'policies/p.yaml',
      stringify(policyDocument('p', { ...labelPolicySpec(), nodePools: { pci: ['pci-general', 'pci-gpu'], web: ['web'] } })),
    );
    assert.deepEqual(loaded.errors, []);
    assert.deepEqual(
      [...(loaded.policies[0]?.nodePools ?? [])],
      [
        ['pci-general', 'pci'],
        ['pci-gpu', 'pci'],
        ['web', 'web'],
      ],
    );
  });

  it('a policy without the field names none', () => {
    const loaded = parsePolicyFile('policies/p.yaml', stringify(policyDocument('p', labelPolicySpec())));
    assert.equal(loaded.policies[0]?.nodePools.size, 0);
  });

  const rows: { name: string; nodePools: unknown; want: RegExp }[] = [
    {
      name: 'a list instead of a mapping',
      nodePools: ['pci'],
      want: /spec\.nodePools: must be a mapping of group to a list of NodePool names/,
    },
    {
      name: 'a group that is no label value',
      nodePools: { 'p c i': ['a'] },
      want: /spec\.nodePools\.p c i: the group "p c i" is not a valid group/,
    },
    { name: 'an empty list', nodePools: { pci: [] }, want: /spec\.nodePools\.pci: must be a non-empty list of NodePool names/ },
    {
      name: 'a name that is no NodePool name',
      nodePools: { pci: ['PCI_1'] },
      want: /spec\.nodePools\.pci\.0: must be a NodePool name .*got "PCI_1"/,
    },
    { name: 'a hostile name is clipped', nodePools: { pci: ['x'.repeat(100_000)] }, want: /got "x{63}…\(99937 more characters\)"$/ },
    {
      name: 'one NodePool named by two groups',
      nodePools: { pci: ['shared'], web: ['shared'] },
      want: /spec\.nodePools\.web\.0: NodePool "shared" is named by the groups "pci" and "web": a NodePool serves one group/,
    },
  ];
  for (const row of rows) {
    it(`refuses ${row.name}`, () => {
      const errors = loadErrors({ ...labelPolicySpec(), nodePools: row.nodePools });
      assert.ok(
        errors.some((error) => row.want.test(error)),
        errors.join('\n').slice(0, 2_000),
      );
    });
  }
});
