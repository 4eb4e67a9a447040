import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { JsonObject } from '../../src/api/types.js';
import { denialStatus } from '../../src/admission/status.js';
import { aggregateMessage } from '../../src/validation/field-errors.js';
import type { AdmissionAttributes, Operation } from '../../src/plugins/plugin.js';
import { createDeviceTolerationValidation, maxEmptyEffectWarnings } from '../../src/plugins/device-toleration-validation.js';
import type { DeviceToleration } from '../../src/tolerations/device-tolerations.js';
import { admissionAttributes, pluginContext, type RequestResource } from '../support/plugin-inputs.js';

const plugin = createDeviceTolerationValidation();
const claims: RequestResource = { group: 'resource.k8s.io', resource: 'resourceclaims', kind: 'ResourceClaim' };
const templates: RequestResource = { group: 'resource.k8s.io', resource: 'resourceclaimtemplates', kind: 'ResourceClaimTemplate' };
const gateOn = pluginContext({ gates: { DRADeviceTaints: true } });
const gateOff = pluginContext({ gates: { DRADeviceTaints: false } });

function claim(tolerations: DeviceToleration[], name = 'gpu-claim'): JsonObject {
  return {
    apiVersion: 'resource.k8s.io/v1',
    kind: 'ResourceClaim',
    metadata: { name, namespace: 'team-a' },
    spec: { devices: { requests: [{ name: 'gpu', exactly: { deviceClassName: 'gpu.example.com', tolerations } }] } },
  };
}

function template(tolerations: DeviceToleration[]): JsonObject {
  return {
    apiVersion: 'resource.k8s.io/v1',
    kind: 'ResourceClaimTemplate',
    metadata: { name: 'gpu-template', namespace: 'team-a' },
    spec: {
      spec: {
        devices: {
          requests: [
            { name: 'any', firstAvailable: [{ name: 'big', deviceClassName: 'big.example.com', tolerations }] },
            { name: 'gpu', exactly: { deviceClassName: 'gpu.example.com', tolerations } },
          ],
        },
      },
    },
  };
}

function decide(resource: RequestResource, operation: Operation, object: JsonObject, on = true, oldObject?: JsonObject) {
  const attrs: AdmissionAttributes = admissionAttributes(resource, operation, object, { oldObject });
  return { handles: plugin.handles(attrs), outcome: plugin.validate(object, attrs, on ? gateOn : gateOff) };
}

function message(resource: RequestResource, object: JsonObject, on = true): string | undefined {
  const { outcome } = decide(resource, 'CREATE', object, on);
  if (outcome.denial === undefined) return undefined;
  assert.equal(outcome.denial.reason, 'Invalid');
  return denialStatus(outcome.denial).message;
}

describe('DeviceTolerationValidation: what the API server refuses, with its paths and words', () => {
  const prefix = 'ResourceClaim.resource.k8s.io "gpu-claim" is invalid: spec.devices.requests[0].exactly.tolerations[0]';
  const rows: { name: string; toleration: DeviceToleration; want: string | undefined }[] = [
    {
      name: 'Gt is not a device operator, whatever TaintTolerationComparisonOperators says',
      toleration: { key: 'example.com/xid', operator: 'Gt', value: '79', effect: 'NoSchedule' },
      want: `${prefix}.operator: Unsupported value: "Gt": supported values: "Equal", "Exists"`,
    },
    {
      name: 'PreferNoSchedule is not a device effect',
      toleration: { key: 'example.com/xid', operator: 'Exists', effect: 'PreferNoSchedule' },
      want: `${prefix}.effect: Unsupported value: "PreferNoSchedule": supported values: "NoExecute", "NoSchedule", "None"`,
    },
    {
      name: 'Exists with a value is refused at .value, in the device words',
      toleration: { key: 'example.com/xid', operator: 'Exists', value: '79' },
      want: `${prefix}.value: Invalid value: "79": must be empty for operator \`Exists\``,
    },
    {
      name: 'an empty operator is Required (the API server defaults it to Equal first)',
      toleration: { key: 'example.com/xid', value: '79' },
      want: `${prefix}.operator: Required value`,
    },
    {
      name: 'a key that is not a label name',
      toleration: { key: 'bad key!', operator: 'Exists' },
      want: `${prefix}.key: Invalid value: "bad key!": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
    },
    {
      name: 'an Equal value that is not a label value',
      toleration: { key: 'example.com/xid', operator: 'Equal', value: '-79' },
      want: `${prefix}.value: Invalid value: "-79": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`,
    },
    {
      name: 'None is a valid effect for a toleration',
      toleration: { key: 'example.com/xid', operator: 'Exists', effect: 'None' },
      want: undefined,
    },
    {
      name: 'an empty key with Equal passes (a pod toleration would not)',
      toleration: { operator: 'Equal', value: '', effect: 'NoSchedule' },
      want: undefined,
    },
    {
      name: 'tolerationSeconds without NoExecute passes (a pod toleration would not)',
      toleration: { key: 'example.com/xid', operator: 'Exists', effect: 'NoSchedule', tolerationSeconds: 30 },
      want: undefined,
    },
  ];
  for (const row of rows) {
    it(row.name, () => {
      assert.equal(message(claims, claim([row.toleration])), row.want);
    });
  }

  it('more than 16 tolerations in a request pass: the documented limit is not enforced', () => {
    const many = Array.from({ length: 17 }, (_, i) => ({ key: `example.com/t${i}`, operator: 'Exists', effect: 'NoSchedule' }));
    assert.equal(message(claims, claim(many)), undefined);
  });

  it('every failure of a toleration is reported, key, then operator and value, then effect', () => {
    const { outcome } = decide(claims, 'CREATE', claim([{ key: 'a/b/c', operator: 'Exists', value: 'x', effect: 'Sometimes' }]));
    assert.ok(outcome.denial?.reason === 'Invalid');
    assert.deepEqual(
      outcome.denial.errors.map((error) => error.field),
      [
        'spec.devices.requests[0].exactly.tolerations[0].key',
        'spec.devices.requests[0].exactly.tolerations[0].value',
        'spec.devices.requests[0].exactly.tolerations[0].effect',
      ],
    );
  });

  it("a template's errors are at spec.spec, firstAvailable's before exactly's, and name the template", () => {
    const status = denialStatus(
      decide(templates, 'CREATE', template([{ key: 'example.com/xid', operator: 'Lt', value: '1' }])).outcome.denial!,
    );
    assert.equal(status.code, 422);
    assert.equal(
      status.message,
      'ResourceClaimTemplate.resource.k8s.io "gpu-template" is invalid: [spec.spec.devices.requests[0].firstAvailable[0].tolerations[0].operator: Unsupported value: "Lt": supported values: "Equal", "Exists", spec.spec.devices.requests[1].exactly.tolerations[0].operator: Unsupported value: "Lt": supported values: "Equal", "Exists"]',
    );
    assert.deepEqual(status.details, {
      name: 'gpu-template',
      group: 'resource.k8s.io',
      kind: 'ResourceClaimTemplate',
      causes: [
        {
          reason: 'FieldValueNotSupported',
          message: 'Unsupported value: "Lt": supported values: "Equal", "Exists"',
          field: 'spec.spec.devices.requests[0].firstAvailable[0].tolerations[0].operator',
        },
        {
          reason: 'FieldValueNotSupported',
          message: 'Unsupported value: "Lt": supported values: "Equal", "Exists"',
          field: 'spec.spec.devices.requests[1].exactly.tolerations[0].operator',
        },
      ],
    });
  });

  it('a request that sets both exactly and firstAvailable has its tolerations left to its own error, as upstream', () => {
    const object = claim([]);
    const both = {
      name: 'both',
      exactly: { deviceClassName: 'x', tolerations: [{ operator: 'Gt' }] },
      firstAvailable: [{ name: 's', deviceClassName: 'x', tolerations: [{ operator: 'Gt' }] }],
    };
    (object.spec as { devices: { requests: unknown[] } }).devices.requests = [both];
    assert.equal(message(claims, object), undefined);
  });
});

describe('DeviceTolerationValidation: the order of the errors by version', () => {
  const object = claim([
    { key: 'example.com/xid', operator: 'Lt', value: '1' },
    { key: 'x y', operator: 'Equal', value: 'a b', effect: 'PreferNoSchedule' },
  ]);
  const fields = (serverVersion?: { major: number; minor: number }): string[] => {
    const attrs = admissionAttributes(claims, 'CREATE', object);
    const outcome = plugin.validate(object, attrs, { ...gateOn, serverVersion });
    assert.ok(outcome.denial?.reason === 'Invalid');
    return outcome.denial.errors.map((error) => error.field.replace('spec.devices.requests[0].exactly.', ''));
  };

  it('through 1.36, and offline, in the handwritten order: each toleration in turn, key, operator or value, effect', () => {
    const handwritten = ['tolerations[0].operator', 'tolerations[1].key', 'tolerations[1].value', 'tolerations[1].effect'];
    assert.deepEqual(fields({ major: 1, minor: 36 }), handwritten);
    assert.deepEqual(fields(undefined), handwritten);
  });

  it('from 1.37 the errors declarative validation answers for (key, operator, effect) come after the value errors, as v1.37.2 lists them', () => {
    assert.deepEqual(fields({ major: 1, minor: 37 }), [
      'tolerations[1].value',
      'tolerations[0].operator',
      'tolerations[1].key',
      'tolerations[1].effect',
    ]);
  });
});

describe('DeviceTolerationValidation: when it judges (gate, operation, resource)', () => {
  const bad = [{ key: 'example.com/xid', operator: 'Gt', value: '1' }];

  it('DRADeviceTaints off: the API server drops device tolerations before validating, so nothing is refused', () => {
    assert.equal(message(claims, claim(bad), false), undefined);
    assert.equal(message(templates, template(bad), false), undefined);
  });

  it('a claim UPDATE is not judged: the API server checks only that the spec did not change', () => {
    assert.equal(decide(claims, 'UPDATE', claim(bad)).handles, false);
  });

  it('a template UPDATE is judged again, as ValidateResourceClaimTemplate runs on UPDATE too', () => {
    const { handles, outcome } = decide(templates, 'UPDATE', template(bad));
    assert.equal(handles, true);
    assert.ok(outcome.denial !== undefined);
  });

  it('a template UPDATE with the gate off keeps and judges the tolerations the stored template already has', () => {
    assert.ok(decide(templates, 'UPDATE', template(bad), false, template(bad)).outcome.denial !== undefined);
    assert.equal(decide(templates, 'UPDATE', template(bad), false, template([])).outcome.denial, undefined);
  });

  it('a claim status update and other resources are not handled', () => {
    const attrs = admissionAttributes(claims, 'UPDATE', claim(bad), { subResource: 'status' });
    assert.equal(plugin.handles(attrs), false);
    assert.equal(plugin.handles(admissionAttributes({ group: '', resource: 'pods', kind: 'Pod' }, 'CREATE', claim(bad))), false);
  });
});

describe('DeviceTolerationValidation: the empty-effect warning', () => {
  it('an empty-effect toleration is admitted with a warning naming its path and the eviction it leads to', () => {
    const { outcome } = decide(claims, 'CREATE', claim([{ key: 'example.com/maintenance', operator: 'Exists' }]));
    assert.equal(outcome.denial, undefined);
    assert.equal(outcome.warnings?.length, 1);
    assert.match(outcome.warnings[0]!, /^spec\.devices\.requests\[0\]\.exactly\.tolerations\[0\]: this toleration has no effect/);
    assert.match(outcome.warnings[0]!, /device taints with key "example\.com\/maintenance"/);
    assert.match(outcome.warnings[0]!, /honours only effect NoExecute/);
  });

  it('a NoExecute or NoSchedule toleration gets no warning', () => {
    const { outcome } = decide(claims, 'CREATE', claim([{ key: 'k', operator: 'Exists', effect: 'NoExecute' }]));
    assert.deepEqual(outcome, {});
  });

  it('the warnings are bounded: at most maxEmptyEffectWarnings, then a count', () => {
    const many = Array.from({ length: 1000 }, () => ({ operator: 'Exists' }));
    const { outcome } = decide(claims, 'CREATE', claim(many));
    assert.equal(outcome.warnings?.length, maxEmptyEffectWarnings + 1);
    assert.equal(outcome.warnings.at(-1), `and ${1000 - maxEmptyEffectWarnings} more device tolerations without an effect`);
  });
});

describe('DeviceTolerationValidation: bad input', () => {
  it('requests that are not a list, requests that are not objects and a missing spec are judged as upstream decodes nothing there', () => {
    for (const spec of [undefined, {}, { devices: {} }, { devices: { requests: [null, 1, 'x'] } }]) {
      const object: JsonObject = { metadata: { name: 'x' }, ...(spec === undefined ? {} : { spec }) };
      assert.deepEqual(decide(claims, 'CREATE', object).outcome, {});
    }
  });

  it('a million tolerations are refused with bounded errors', () => {
    const many = Array.from({ length: 1_000_000 }, () => ({ key: 'k', operator: 'Gt' }));
    const { outcome } = decide(claims, 'CREATE', claim(many));
    assert.ok(outcome.denial?.reason === 'Invalid');
    assert.equal(outcome.denial.errors.length, 1000);
    assert.equal(outcome.denial.omittedErrors, 999_000);
    assert.ok(aggregateMessage(outcome.denial.errors).length < 64 * 1024);
  });
});
