import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { JsonObject, Namespace } from '../../src/api/types.js';
import { diffJson } from '../../src/admission/json-patch-diff.js';
import type { Operation } from '../../src/plugins/plugin.js';
import {
  createDeviceTolerationRestriction,
  defaultDeviceTolerationsAnnotation,
  defaultDeviceTolerationsProblem,
  deviceTolerationsWhitelistAnnotation,
  extendedResourceClaimAnnotation,
} from '../../src/plugins/device-toleration-restriction.js';
import type { DeviceToleration } from '../../src/tolerations/device-tolerations.js';
import { admissionAttributes, pluginContext, type RequestResource } from '../support/plugin-inputs.js';

const claims: RequestResource = { group: 'resource.k8s.io', resource: 'resourceclaims', kind: 'ResourceClaim' };
const templates: RequestResource = { group: 'resource.k8s.io', resource: 'resourceclaimtemplates', kind: 'ResourceClaimTemplate' };
const grace: DeviceToleration = { key: 'example.com/maintenance', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 600 };

function namespace(annotations: Record<string, string> = {}): Namespace {
  return { metadata: { name: 'ml-team', annotations } };
}

function claim(tolerations?: DeviceToleration[], annotations?: Record<string, string>): JsonObject {
  return {
    apiVersion: 'resource.k8s.io/v1',
    kind: 'ResourceClaim',
    metadata: { name: 'gpu', namespace: 'ml-team', ...(annotations === undefined ? {} : { annotations }) },
    spec: {
      devices: {
        requests: [{ name: 'gpu', exactly: { deviceClassName: 'gpu.example.com', ...(tolerations === undefined ? {} : { tolerations }) } }],
      },
    },
  };
}

function template(tolerations?: DeviceToleration[]): JsonObject {
  return {
    apiVersion: 'resource.k8s.io/v1',
    kind: 'ResourceClaimTemplate',
    metadata: { name: 'one-gpu', namespace: 'ml-team' },
    spec: {
      spec: {
        devices: {
          requests: [
            {
              name: 'any',
              firstAvailable: [
                { name: 'big', deviceClassName: 'big' },
                { name: 'small', deviceClassName: 'small', tolerations },
              ],
            },
          ],
        },
      },
    },
  };
}

function admit(
  object: JsonObject,
  ns: Namespace,
  options: { defaults?: DeviceToleration[]; resource?: RequestResource; operation?: Operation; gate?: boolean } = {},
) {
  const plugin = createDeviceTolerationRestriction({ defaults: options.defaults ?? [] });
  const attrs = admissionAttributes(options.resource ?? claims, options.operation ?? 'CREATE', object);
  const context = pluginContext({ gates: { DRADeviceTaints: options.gate ?? true }, namespace: ns });
  return {
    handles: plugin.handles(attrs),
    outcome: plugin.admit(object, attrs, context),
    validated: plugin.validate(object, attrs, context),
  };
}

function exactlyTolerations(object: JsonObject | undefined): unknown {
  return (object?.spec as { devices: { requests: { exactly: { tolerations?: unknown } }[] } }).devices.requests[0]!.exactly.tolerations;
}

describe('DeviceTolerationRestriction: defaults', () => {
  it('the cluster default is added to a new claim that lacks it, as a patch that adds only it', () => {
    const object = claim();
    const { outcome } = admit(object, namespace(), { defaults: [grace] });
    assert.deepEqual(exactlyTolerations(outcome.object), [grace]);
    assert.deepEqual(diffJson(object, outcome.object!), [
      { op: 'add', path: '/spec/devices/requests/0/exactly/tolerations', value: [grace] },
    ]);
  });

  it("the namespace's annotation replaces the cluster default", () => {
    const mine = { ...grace, tolerationSeconds: 60 };
    const { outcome } = admit(claim(), namespace({ [defaultDeviceTolerationsAnnotation]: JSON.stringify([mine]) }), { defaults: [grace] });
    assert.deepEqual(exactlyTolerations(outcome.object), [mine]);
  });

  it('never duplicated: a claim that already has the default (a claim made from a defaulted template) is left as it is', () => {
    const object = claim([grace]);
    assert.equal(admit(object, namespace(), { defaults: [grace] }).outcome.object, object);
  });

  it("never where covered: the claim's own NoExecute toleration of the key, or an empty-key Exists NoExecute, stands", () => {
    for (const own of [
      { key: 'example.com/maintenance', operator: 'Exists', effect: 'NoExecute' },
      { key: 'example.com/maintenance', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 5 },
      { operator: 'Exists', effect: 'NoExecute' },
    ]) {
      const object = claim([own]);
      assert.equal(admit(object, namespace(), { defaults: [grace] }).outcome.object, object, JSON.stringify(own));
    }
  });

  it('an empty-effect toleration does not cover the default: the eviction controller does not honour it, so the grace period is added', () => {
    const own = { key: 'example.com/maintenance', operator: 'Exists' };
    assert.deepEqual(exactlyTolerations(admit(claim([own]), namespace(), { defaults: [grace] }).outcome.object), [own, grace]);
  });

  it("a template's firstAvailable subrequests each get it", () => {
    const { outcome } = admit(template(), namespace(), { defaults: [grace], resource: templates });
    const subRequests = (outcome.object?.spec as { spec: { devices: { requests: { firstAvailable: { tolerations?: unknown }[] }[] } } })
      .spec.devices.requests[0]!.firstAvailable;
    assert.deepEqual(
      subRequests.map((sub) => sub.tolerations),
      [[grace], [grace]],
    );
  });

  it('CREATE only, with DRADeviceTaints on, and never for a claim the scheduler made for an extended resource', () => {
    assert.equal(admit(claim(), namespace(), { defaults: [grace], operation: 'UPDATE' }).handles, false);
    const off = claim();
    assert.equal(admit(off, namespace(), { defaults: [grace], gate: false }).outcome.object, off);
    const extended = claim(undefined, { [extendedResourceClaimAnnotation]: 'true' });
    assert.equal(admit(extended, namespace(), { defaults: [grace] }).outcome.object, extended);
  });

  it('a default must be a bounded NoExecute grace period, else the namespace annotation is refused and the flag is a usage error', () => {
    assert.match(
      defaultDeviceTolerationsProblem([{ key: 'k', operator: 'Exists', effect: 'NoExecute' }]) ?? '',
      /tolerationSeconds from 0 to 86400/,
    );
    assert.match(
      defaultDeviceTolerationsProblem([{ key: 'k', operator: 'Exists', effect: 'NoSchedule', tolerationSeconds: 5 }]) ?? '',
      /effect NoExecute/,
    );
    assert.match(defaultDeviceTolerationsProblem([{ ...grace, tolerationSeconds: 86_401 }]) ?? '', /from 0 to 86400/);
    assert.match(defaultDeviceTolerationsProblem([{ ...grace, operator: 'Gt' }]) ?? '', /Unsupported value: "Gt"/);
    assert.equal(defaultDeviceTolerationsProblem([grace]), undefined);
    assert.match(
      defaultDeviceTolerationsProblem(Array.from({ length: 17 }, () => grace)) ?? '',
      /^17 default device tolerations: at most 16/,
    );
    const forever = JSON.stringify([{ key: 'k', operator: 'Exists', effect: 'NoExecute' }]);
    const { outcome } = admit(claim(), namespace({ [defaultDeviceTolerationsAnnotation]: forever }));
    assert.ok(outcome.denial?.reason === 'Forbidden');
    assert.match(
      outcome.denial.message,
      /^namespace "ml-team" annotation "tolerator.dev\/default-device-tolerations": toleration \[0\]: a default device toleration is a grace period/,
    );
  });

  it('an annotation that is not a JSON list of tolerations is refused with the reason', () => {
    const { outcome } = admit(claim(), namespace({ [defaultDeviceTolerationsAnnotation]: '{"key":' }));
    assert.ok(outcome.denial?.reason === 'Forbidden');
    assert.match(
      outcome.denial.message,
      /^namespace "ml-team" annotation "tolerator.dev\/default-device-tolerations": unexpected end of JSON input/,
    );
  });
});

describe('DeviceTolerationRestriction: the per-namespace allow-list', () => {
  const allowList = JSON.stringify([{ key: 'example.com/maintenance', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 3600 }]);

  it('a toleration within the allow-list is admitted', () => {
    assert.deepEqual(admit(claim([grace]), namespace({ [deviceTolerationsWhitelistAnnotation]: allowList })).validated, {});
  });

  it('one outside it is refused, naming the request and the namespace', () => {
    for (const outside of [
      { key: 'example.com/maintenance', operator: 'Exists', effect: 'NoExecute' },
      { key: 'example.com/other', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 5 },
      { operator: 'Exists' },
    ]) {
      const { validated } = admit(claim([outside]), namespace({ [deviceTolerationsWhitelistAnnotation]: allowList }));
      assert.ok(validated.denial?.reason === 'Forbidden', JSON.stringify(outside));
      assert.equal(
        validated.denial.message,
        'spec.devices.requests[0].exactly.tolerations: device tolerations conflict with the allow-list of namespace "ml-team" (annotation tolerator.dev/device-tolerations-whitelist)',
      );
    }
  });

  it('a tenant cannot lift the allow-list by writing the extended-resource-claim annotation on its own claim or template', () => {
    // Anyone who may create a claim may write the annotation (the API server does not reserve it),
    // and the claims the scheduler makes for extended resources carry no device tolerations
    // (createRequestsAndMappings in pkg/scheduler/framework/plugins/dynamicresources), so the
    // allow-list has nothing to refuse in those: the annotation must not exempt anything from it.
    const annotations = { [extendedResourceClaimAnnotation]: 'true' };
    const escaping = { operator: 'Exists' } satisfies DeviceToleration;
    const fromClaim = admit(claim([escaping], annotations), namespace({ [deviceTolerationsWhitelistAnnotation]: allowList })).validated;
    assert.equal(fromClaim.denial?.reason, 'Forbidden');
    const annotatedTemplate = template([escaping]);
    annotatedTemplate.metadata = { ...(annotatedTemplate.metadata as JsonObject), annotations };
    const fromTemplate = admit(annotatedTemplate, namespace({ [deviceTolerationsWhitelistAnnotation]: allowList }), {
      resource: templates,
    }).validated;
    assert.equal(fromTemplate.denial?.reason, 'Forbidden');
  });

  it("gate view skew: a toleration outside the allow-list that reaches the validating webhook is refused even where tolerator's view of DRADeviceTaints is off (the API server drops device tolerations when its own gate is off, so one that arrives was kept)", () => {
    const { validated } = admit(claim([{ operator: 'Exists' }]), namespace({ [deviceTolerationsWhitelistAnnotation]: allowList }), {
      gate: false,
    });
    assert.equal(validated.denial?.reason, 'Forbidden');
  });

  it('no annotation, or an empty list, allows everything (as PodTolerationRestriction)', () => {
    assert.deepEqual(admit(claim([{ operator: 'Exists' }]), namespace()).validated, {});
    assert.deepEqual(admit(claim([{ operator: 'Exists' }]), namespace({ [deviceTolerationsWhitelistAnnotation]: '[]' })).validated, {});
  });
});
