import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { JsonObject, Toleration } from '../../src/api/types.js';
import { aggregateMessage, errorMessage, maxFieldErrors } from '../../src/validation/field-errors.js';
import type { AdmissionAttributes, Operation, PluginContext } from '../../src/plugins/plugin.js';
import { createTolerationValidation } from '../../src/plugins/toleration-validation.js';
import { admissionAttributes, pluginContext, podResource, type RequestResource } from '../support/plugin-inputs.js';

const plugin = createTolerationValidation();
const allFour = 'supported values: "Equal", "Exists", "Lt", "Gt"';
const annotationKey = 'scheduler.alpha.kubernetes.io/tolerations';

function context(gateOn: boolean): PluginContext {
  return pluginContext({ gates: { TaintTolerationComparisonOperators: gateOn } });
}

/** The request names `from-attributes`, so a test can tell the request's name from the object's. */
function attributes(
  resource: RequestResource,
  operation: Operation,
  object: JsonObject | undefined,
  oldObject?: JsonObject,
  subResource = '',
): AdmissionAttributes {
  return admissionAttributes(resource, operation, object, { oldObject, subResource, name: 'from-attributes' });
}

function pod(tolerations: Toleration[] | undefined, annotations?: Record<string, string>): JsonObject {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'web', ...(annotations === undefined ? {} : { annotations }) },
    spec: { containers: [{ name: 'c', image: 'nginx' }], ...(tolerations === undefined ? {} : { tolerations }) },
  };
}

/** Runs the plugin; returns the aggregate message of the denial, or undefined when allowed. */
function decide(attrs: AdmissionAttributes, gateOn: boolean): string | undefined {
  assert.ok(plugin.handles(attrs));
  const outcome = plugin.validate(attrs.object ?? {}, attrs, context(gateOn));
  const denial = outcome.denial;
  if (denial === undefined) {
    return undefined;
  }
  assert.ok(denial.reason === 'Invalid', `a ${denial.reason} denial`);
  return aggregateMessage(denial.errors);
}

describe('TolerationValidation: the acceptance cases', () => {
  const rows: { name: string; given: { tolerations: Toleration[]; gate: boolean }; want: string | undefined }[] = [
    {
      name: 'a CREATE with a Gt toleration and the gate off is refused as unsupported',
      given: { tolerations: [{ key: 'example.com/tier', operator: 'Gt', value: '950', effect: 'NoSchedule' }], gate: false },
      want: `spec.tolerations[0].operator: Unsupported value: "Gt": ${allFour}`,
    },
    {
      name: 'a CREATE with a Gt toleration of "0550" and the gate on is refused as non-canonical',
      given: { tolerations: [{ key: 'example.com/tier', operator: 'Gt', value: '0550', effect: 'NoSchedule' }], gate: true },
      want: 'spec.tolerations[0].value: Invalid value: "0550": must be a valid decimal integer in canonical form',
    },
    {
      name: 'a CREATE with a Gt toleration of "950" and the gate on is allowed',
      given: { tolerations: [{ key: 'example.com/tier', operator: 'Gt', value: '950', effect: 'NoSchedule' }], gate: true },
      want: undefined,
    },
  ];
  for (const row of rows) {
    it(row.name, () => {
      assert.equal(decide(attributes(podResource, 'CREATE', pod(row.given.tolerations)), row.given.gate), row.want);
    });
  }

  it('the denial names the Pod, its core group and its name', () => {
    const attrs = attributes(podResource, 'CREATE', pod([{ key: 'k', operator: 'Gt', value: '1' }]));
    const denial = plugin.validate(attrs.object!, attrs, context(false)).denial;
    assert.deepEqual(
      denial && denial.reason === 'Invalid'
        ? { group: denial.group, kind: denial.kind, name: denial.name, fields: denial.errors.map((e) => [e.type, e.field]) }
        : denial,
      { group: '', kind: 'Pod', name: 'web', fields: [['FieldValueNotSupported', 'spec.tolerations[0].operator']] },
    );
  });
});

describe('TolerationValidation: which requests it handles', () => {
  const rows: { name: string; given: AdmissionAttributes; want: boolean }[] = [
    { name: 'a pod CREATE is handled', given: attributes(podResource, 'CREATE', pod([])), want: true },
    { name: 'a pod UPDATE is handled', given: attributes(podResource, 'UPDATE', pod([]), pod([])), want: true },
    { name: 'a pod DELETE is not handled', given: attributes(podResource, 'DELETE', undefined), want: false },
    { name: 'a pod CONNECT is not handled', given: attributes(podResource, 'CONNECT', undefined), want: false },
    { name: 'a pod status update is not handled', given: attributes(podResource, 'UPDATE', pod([]), pod([]), 'status'), want: false },
    { name: 'a pod binding is not handled', given: attributes(podResource, 'CREATE', {}, undefined, 'binding'), want: false },
    {
      name: 'a deployment scale is not handled',
      given: attributes({ group: 'apps', resource: 'deployments', kind: 'Deployment' }, 'UPDATE', {}, {}, 'scale'),
      want: false,
    },
    {
      name: 'a ConfigMap is not handled',
      given: attributes({ group: '', resource: 'configmaps', kind: 'ConfigMap' }, 'CREATE', {}),
      want: false,
    },
    {
      name: 'a deployments resource in another group is not handled',
      given: attributes({ group: 'example.com', resource: 'deployments', kind: 'Deployment' }, 'CREATE', {}),
      want: false,
    },
  ];
  for (const row of rows) {
    it(row.name, () => {
      assert.equal(plugin.handles(row.given), row.want);
    });
  }

  it('is named TolerationValidation', () => {
    assert.equal(plugin.name, 'TolerationValidation');
  });
});

describe('TolerationValidation: pod CREATE checks every row', () => {
  const rows: { name: string; given: { tolerations: Toleration[]; gate: boolean }; want: string | undefined }[] = [
    { name: 'a pod without tolerations is allowed', given: { tolerations: [], gate: false }, want: undefined },
    {
      name: 'an empty key with Gt and the gate on reports the key rule and checks the value',
      given: { tolerations: [{ operator: 'Gt', value: '7' }], gate: true },
      want: 'spec.tolerations[0].operator: Invalid value: "Gt": operator must be Exists when `key` is empty, which means "match all values and all keys"',
    },
    {
      name: 'an empty key with Gt and the gate off reports Invalid then NotSupported',
      given: { tolerations: [{ operator: 'Gt', value: '7' }], gate: false },
      want: `[spec.tolerations[0].operator: Invalid value: "Gt": operator must be Exists when \`key\` is empty, which means "match all values and all keys", spec.tolerations[0].operator: Unsupported value: "Gt": ${allFour}]`,
    },
    {
      name: 'tolerationSeconds with a NoSchedule effect is refused',
      given: { tolerations: [{ key: 'k', operator: 'Exists', effect: 'NoSchedule', tolerationSeconds: 5 }], gate: false },
      want: 'spec.tolerations[0].effect: Invalid value: "NoSchedule": effect must be \'NoExecute\' when `tolerationSeconds` is set',
    },
    {
      name: 'a negative tolerationSeconds with NoExecute is allowed',
      given: { tolerations: [{ key: 'k', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: -1 }], gate: false },
      want: undefined,
    },
    {
      name: 'an effect in lower case is refused',
      given: { tolerations: [{ key: 'k', operator: 'Exists', effect: 'noexecute' }], gate: false },
      want: 'spec.tolerations[0].effect: Unsupported value: "noexecute": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"',
    },
    {
      name: 'Gt with "9223372036854775808" and the gate on gives the range error only',
      given: { tolerations: [{ key: 'k', operator: 'Gt', value: '9223372036854775808' }], gate: true },
      want: 'spec.tolerations[0].value: Invalid value: "9223372036854775808": strconv.ParseInt: parsing "9223372036854775808": value out of range',
    },
  ];
  for (const row of rows) {
    it(row.name, () => {
      assert.equal(decide(attributes(podResource, 'CREATE', pod(row.given.tolerations)), row.given.gate), row.want);
    });
  }

  it('a 64-byte Equal value is reported at .operator with the length message', () => {
    const message = decide(attributes(podResource, 'CREATE', pod([{ key: 'k', operator: 'Equal', value: 'v'.repeat(64) }])), false);
    assert.ok(message?.startsWith(`spec.tolerations[0].operator: Invalid value: "${'v'.repeat(64)}": must be no more than 63 `), message);
  });

  it('a too long key is reported at .key', () => {
    const message = decide(attributes(podResource, 'CREATE', pod([{ key: 'k'.repeat(64), operator: 'Exists' }])), false);
    assert.ok(
      message?.startsWith(`spec.tolerations[0].key: Invalid value: "${'k'.repeat(64)}": name part must be no more than 63 `),
      message,
    );
  });

  it('the name falls back to the request name when the object has none', () => {
    const object = { metadata: {}, spec: { tolerations: [{ key: 'k', operator: 'Lt', value: '1' }] } };
    const attrs = attributes(podResource, 'CREATE', object);
    const denial = plugin.validate(object, attrs, context(false)).denial;
    assert.equal(denial?.reason === 'Invalid' ? denial.name : undefined, 'from-attributes');
  });
});

describe('TolerationValidation: pod UPDATE', () => {
  const gt: Toleration = { key: 'k', operator: 'Gt', value: '5' };
  const exists: Toleration = { key: 'k', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 60 };
  const forbidden = 'spec.tolerations: Forbidden: existing toleration can not be modified except its tolerationSeconds';
  const rows: { name: string; given: { old: Toleration[]; new: Toleration[]; gate: boolean }; want: string | undefined }[] = [
    {
      name: 'gate off, old pod had a Gt: a new Gt is accepted',
      given: { old: [gt], new: [gt, { key: 'j', operator: 'Gt', value: '10' }], gate: false },
      want: undefined,
    },
    {
      name: 'gate off, old pod had a Gt: a new Gt is still numerically validated',
      given: { old: [gt], new: [gt, { key: 'j', operator: 'Lt', value: '010' }], gate: false },
      want: 'spec.tolerations[1].value: Invalid value: "010": must be a valid decimal integer in canonical form',
    },
    {
      name: 'gate off, old pod had none: a new Gt is NotSupported at its own index',
      given: { old: [exists], new: [exists, gt], gate: false },
      want: `spec.tolerations[1].operator: Unsupported value: "Gt": ${allFour}`,
    },
    { name: 'removing a toleration is Forbidden', given: { old: [exists], new: [], gate: false }, want: forbidden },
    { name: 'changing a value is Forbidden', given: { old: [gt], new: [{ ...gt, value: '6' }], gate: true }, want: forbidden },
    {
      name: 'changing tolerationSeconds is allowed',
      given: { old: [exists], new: [{ ...exists, tolerationSeconds: 5 }], gate: false },
      want: undefined,
    },
    {
      name: 'adding a toleration is allowed',
      given: { old: [exists], new: [exists, { key: 'x', operator: 'Exists' }], gate: false },
      want: undefined,
    },
    {
      name: 'reordering is allowed',
      given: { old: [exists, { key: 'x', operator: 'Exists' }], new: [{ key: 'x', operator: 'Exists' }, exists], gate: false },
      want: undefined,
    },
    {
      name: "a Forbidden update still reports the new list's errors found before it",
      given: { old: [exists], new: [{ key: 'x', operator: 'Exists', value: 'v' }], gate: false },
      want: `[spec.tolerations[0].operator: Invalid value: "v": value must be empty when \`operator\` is 'Exists', ${forbidden}]`,
    },
  ];
  for (const row of rows) {
    it(row.name, () => {
      assert.equal(decide(attributes(podResource, 'UPDATE', pod(row.given.new), pod(row.given.old)), row.given.gate), row.want);
    });
  }

  it('an error found twice on UPDATE is listed twice and rendered once', () => {
    const attrs = attributes(podResource, 'UPDATE', pod([exists, gt]), pod([exists]));
    const denial = plugin.validate(attrs.object!, attrs, context(false)).denial;
    assert.ok(denial?.reason === 'Invalid');
    assert.deepEqual(denial.errors.map(errorMessage), [
      `spec.tolerations[1].operator: Unsupported value: "Gt": ${allFour}`,
      `spec.tolerations[1].operator: Unsupported value: "Gt": ${allFour}`,
    ]);
    assert.equal(aggregateMessage(denial.errors), `spec.tolerations[1].operator: Unsupported value: "Gt": ${allFour}`);
  });
});

describe('TolerationValidation: an error repeated on pod UPDATE, per Kubernetes version', () => {
  // Vectors: kube-apiserver v1.36.3 and v1.37.2, the causes of a PUT of a pod stored with one
  // Exists toleration (the gate off), as each answered it.
  const keyError =
    "Invalid value: \"bad key\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
  const exists: Toleration = { key: 'k', operator: 'Exists' };
  const rows: { name: string; new: JsonObject; old: JsonObject; v136: string[]; v137: string[] }[] = [
    {
      name: 'an added Gt',
      new: pod([exists, { key: 'g', operator: 'Gt', value: '5', effect: 'NoSchedule' }]),
      old: pod([exists]),
      v136: [
        `spec.tolerations[1].operator: Unsupported value: "Gt": ${allFour}`,
        `spec.tolerations[1].operator: Unsupported value: "Gt": ${allFour}`,
      ],
      v137: [`spec.tolerations[1].operator: Unsupported value: "Gt": ${allFour}`],
    },
    {
      name: 'two bad tolerations added: the repeats follow the first pass, in its order',
      new: pod([exists, { key: 'bad key', operator: 'Exists' }, { key: 'k2', operator: 'Exists', value: 'v' }]),
      old: pod([exists]),
      v136: [
        `spec.tolerations[1].key: ${keyError}`,
        'spec.tolerations[2].operator: Invalid value: "v": value must be empty when `operator` is \'Exists\'',
        `spec.tolerations[1].key: ${keyError}`,
        'spec.tolerations[2].operator: Invalid value: "v": value must be empty when `operator` is \'Exists\'',
      ],
      v137: [
        `spec.tolerations[1].key: ${keyError}`,
        'spec.tolerations[2].operator: Invalid value: "v": value must be empty when `operator` is \'Exists\'',
      ],
    },
    {
      name: 'a bad tolerations annotation (validated on UPDATE twice too)',
      new: pod([exists], { [annotationKey]: '[{"key":"bad key","operator":"Exists"}]' }),
      old: pod([exists]),
      v136: [`metadata.annotations.${annotationKey}[0].key: ${keyError}`, `metadata.annotations.${annotationKey}[0].key: ${keyError}`],
      v137: [`metadata.annotations.${annotationKey}[0].key: ${keyError}`],
    },
    {
      name: 'a modified toleration that is also bad: two different errors, kept on every version',
      new: pod([{ key: 'bad key', operator: 'Exists' }]),
      old: pod([exists]),
      v136: [
        `spec.tolerations[0].key: ${keyError}`,
        'spec.tolerations: Forbidden: existing toleration can not be modified except its tolerationSeconds',
      ],
      v137: [
        `spec.tolerations[0].key: ${keyError}`,
        'spec.tolerations: Forbidden: existing toleration can not be modified except its tolerationSeconds',
      ],
    },
  ];
  const causes = (row: (typeof rows)[number], serverVersion: PluginContext['serverVersion']): string[] => {
    const attrs = attributes(podResource, 'UPDATE', row.new, row.old);
    const denial = plugin.validate(row.new, attrs, { ...context(false), serverVersion }).denial;
    assert.ok(denial?.reason === 'Invalid');
    return denial.errors.map(errorMessage);
  };
  for (const row of rows) {
    it(`${row.name}: 1.35 and 1.36 list each repeat, 1.37 each error once; no version known is 1.35's`, () => {
      assert.deepEqual(causes(row, { major: 1, minor: 35 }), row.v136);
      assert.deepEqual(causes(row, { major: 1, minor: 36 }), row.v136);
      assert.deepEqual(causes(row, { major: 1, minor: 37 }), row.v137);
      assert.deepEqual(causes(row, { major: 1, minor: 38 }), row.v137);
      assert.deepEqual(causes(row, undefined), row.v136);
    });
  }
});

describe('TolerationValidation: pod templates', () => {
  const bad: Toleration[] = [{ key: 'k', operator: 'Gt', value: '5' }];
  const withTemplate = (path: string[], tolerations: Toleration[], annotations?: Record<string, string>): JsonObject => {
    let node: JsonObject = {
      metadata: annotations === undefined ? { labels: { app: 'web' } } : { labels: { app: 'web' }, annotations },
      spec: { containers: [{ name: 'c', image: 'nginx' }], tolerations },
    };
    for (const segment of [...path].reverse()) {
      node = { [segment]: node };
    }
    return { metadata: { name: 'web' }, ...node };
  };
  const rows: {
    name: string;
    given: { group: string; resource: string; kind: string; path: string[] };
    want: { group: string; message: string };
  }[] = [
    {
      name: 'a Deployment template is checked at spec.template',
      given: { group: 'apps', resource: 'deployments', kind: 'Deployment', path: ['spec', 'template'] },
      want: { group: 'apps', message: 'spec.template.spec.tolerations[0].operator' },
    },
    {
      name: 'a ReplicaSet template is checked at spec.template',
      given: { group: 'apps', resource: 'replicasets', kind: 'ReplicaSet', path: ['spec', 'template'] },
      want: { group: 'apps', message: 'spec.template.spec.tolerations[0].operator' },
    },
    {
      name: 'a StatefulSet template is checked at spec.template',
      given: { group: 'apps', resource: 'statefulsets', kind: 'StatefulSet', path: ['spec', 'template'] },
      want: { group: 'apps', message: 'spec.template.spec.tolerations[0].operator' },
    },
    {
      name: 'a DaemonSet template is checked at spec.template',
      given: { group: 'apps', resource: 'daemonsets', kind: 'DaemonSet', path: ['spec', 'template'] },
      want: { group: 'apps', message: 'spec.template.spec.tolerations[0].operator' },
    },
    {
      name: 'a Job template is checked at spec.template',
      given: { group: 'batch', resource: 'jobs', kind: 'Job', path: ['spec', 'template'] },
      want: { group: 'batch', message: 'spec.template.spec.tolerations[0].operator' },
    },
    {
      name: 'a CronJob template is checked at spec.jobTemplate.spec.template',
      given: { group: 'batch', resource: 'cronjobs', kind: 'CronJob', path: ['spec', 'jobTemplate', 'spec', 'template'] },
      want: { group: 'batch', message: 'spec.jobTemplate.spec.template.spec.tolerations[0].operator' },
    },
    {
      name: 'a PodTemplate is checked at template',
      given: { group: '', resource: 'podtemplates', kind: 'PodTemplate', path: ['template'] },
      want: { group: '', message: 'template.spec.tolerations[0].operator' },
    },
    {
      name: 'a ReplicationController template is checked at spec.template',
      given: { group: '', resource: 'replicationcontrollers', kind: 'ReplicationController', path: ['spec', 'template'] },
      want: { group: '', message: 'spec.template.spec.tolerations[0].operator' },
    },
  ];
  for (const row of rows) {
    it(row.name, () => {
      const object = withTemplate(row.given.path, bad);
      const attrs = attributes(row.given, 'CREATE', object);
      assert.ok(plugin.handles(attrs));
      const denial = plugin.validate(object, attrs, context(false)).denial;
      assert.ok(denial?.reason === 'Invalid');
      assert.deepEqual(
        { group: denial.group, kind: denial.kind, name: denial.name, message: aggregateMessage(denial.errors) },
        { group: row.want.group, kind: row.given.kind, name: 'web', message: `${row.want.message}: Unsupported value: "Gt": ${allFour}` },
      );
    });
  }

  const deployment = { group: 'apps', resource: 'deployments', kind: 'Deployment' };
  const path = ['spec', 'template'];
  const updateRows: { name: string; given: { old: Toleration[]; new: Toleration[] }; want: string | undefined }[] = [
    {
      name: 'a template UPDATE whose old template had a Gt accepts Gt with the gate off',
      given: { old: bad, new: [...bad, { key: 'j', operator: 'Lt', value: '3' }] },
      want: undefined,
    },
    {
      name: 'a template UPDATE whose old template had none refuses Gt with the gate off',
      given: { old: [], new: bad },
      want: `spec.template.spec.tolerations[0].operator: Unsupported value: "Gt": ${allFour}`,
    },
    {
      name: 'a template may drop and change tolerations freely',
      given: { old: [{ key: 'a', operator: 'Exists' }], new: [{ key: 'b', operator: 'Exists' }] },
      want: undefined,
    },
  ];
  for (const row of updateRows) {
    it(row.name, () => {
      assert.equal(
        decide(attributes(deployment, 'UPDATE', withTemplate(path, row.given.new), withTemplate(path, row.given.old)), false),
        row.want,
      );
    });
  }

  it('a template annotation is checked at <template>.annotations, without "metadata"', () => {
    const object = withTemplate(path, [], { [annotationKey]: '[{"key":"k","operator":"Exists","value":"v"}]' });
    assert.equal(
      decide(attributes(deployment, 'CREATE', object), false),
      `spec.template.annotations.${annotationKey}[0].operator: Invalid value: "v": value must be empty when \`operator\` is 'Exists'`,
    );
  });
});

describe('TolerationValidation: the deprecated tolerations annotation on pods', () => {
  const rows: {
    name: string;
    given: { operation: Operation; annotation: string; tolerations?: Toleration[] };
    want: string | undefined;
  }[] = [
    {
      name: 'a valid annotation is allowed',
      given: { operation: 'CREATE', annotation: '[{"key":"k","operator":"Exists"}]' },
      want: undefined,
    },
    { name: 'an empty annotation is not checked', given: { operation: 'CREATE', annotation: '' }, want: undefined },
    {
      name: 'a bad toleration is reported under metadata.annotations.<key>[i]',
      given: { operation: 'CREATE', annotation: '[{"key":"k","operator":"Exists"},{"key":"k","operator":"Gt","value":"1"}]' },
      want: `metadata.annotations.${annotationKey}[1].operator: Unsupported value: "Gt": ${allFour}`,
    },
    {
      name: 'unparsable JSON is Invalid at metadata.annotations naming the key',
      given: { operation: 'CREATE', annotation: 'not json' },
      want: `metadata.annotations: Invalid value: "${annotationKey}": invalid character 'o' in literal null (expecting 'u')`,
    },
    {
      name: 'annotation errors come before spec errors',
      given: { operation: 'CREATE', annotation: '[{"operator":"Equal"}]', tolerations: [{ key: 'k', operator: 'In' }] },
      want:
        `[metadata.annotations.${annotationKey}[0].operator: Invalid value: "Equal": operator must be Exists when \`key\` is empty, which means "match all values and all keys", ` +
        'spec.tolerations[0].operator: Unsupported value: "In": supported values: "Equal", "Exists"]',
    },
    {
      name: 'on UPDATE the annotation is checked too',
      given: { operation: 'UPDATE', annotation: '{}' },
      want: `metadata.annotations: Invalid value: "${annotationKey}": json: cannot unmarshal object into Go value of type []core.Toleration`,
    },
  ];
  for (const row of rows) {
    it(row.name, () => {
      const object = pod(row.given.tolerations, { [annotationKey]: row.given.annotation });
      const old = row.given.operation === 'UPDATE' ? pod(undefined) : undefined;
      assert.equal(decide(attributes(podResource, row.given.operation, object, old), false), row.want);
    });
  }

  it('on UPDATE an annotation error is listed twice, as upstream validates it twice', () => {
    const object = pod(undefined, { [annotationKey]: '[' });
    const attrs = attributes(podResource, 'UPDATE', object, pod(undefined));
    const denial = plugin.validate(object, attrs, context(false)).denial;
    assert.ok(denial?.reason === 'Invalid');
    assert.deepEqual(
      denial.errors.map((e) => e.field),
      ['metadata.annotations', 'metadata.annotations'],
    );
  });
});

describe('TolerationValidation: a pod with more errors than a call has room for arguments', () => {
  it('refuses an UPDATE whose 40,000 invalid tolerations give 160,000 errors, instead of throwing', () => {
    // Each toleration breaks four rules (key, operator, effect, tolerationSeconds without
    // NoExecute); about 50 bytes of JSON each, so the pod stays well within the 3 MiB body limit.
    // Collected with push(...list), that many errors overflowed the call stack: a 500 where the
    // API server itself answers 422.
    const bad = Array.from({ length: 40_000 }, (_, i): Toleration => ({ key: `-${i}`, operator: 'x', effect: 'y', tolerationSeconds: 1 }));
    const attrs = attributes(podResource, 'UPDATE', pod(bad), pod(bad));
    const outcome = plugin.validate(attrs.object ?? {}, attrs, context(false));
    assert.equal(outcome.denial?.reason, 'Invalid');
    // The first maxFieldErrors are kept and the rest counted, so the denial stays bounded.
    assert.equal(outcome.denial.errors.length, maxFieldErrors);
    assert.equal(outcome.denial.omittedErrors, 2 * 4 * bad.length - maxFieldErrors);
  });
});
