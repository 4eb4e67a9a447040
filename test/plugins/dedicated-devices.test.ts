/**
 * Tenancy for DRA devices (the device half of DedicatedNodes): a tenant claim may not tolerate
 * another group's device taint in any form, and a DeviceTaintRule that reaches the groups'
 * devices needs a platform identity.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { JsonObject } from '../../src/api/types.js';
import { denialStatus } from '../../src/admission/status.js';
import { createDedicatedNodes } from '../../src/plugins/dedicated-nodes.js';
import type { Operation, UserInfo, ValidationOutcome } from '../../src/plugins/plugin.js';
import { createPolicySet } from '../../src/tenancy/policy-set.js';
import type { TenancyPolicy } from '../../src/tenancy/policy.js';
import { admissionAttributes, pluginContext, type RequestResource } from '../support/plugin-inputs.js';
import { compilePolicy, labelPolicySpec, namespace } from '../tenancy/tenancy-fixtures.js';

const key = 'gpu.example.com/dedicated';
const claims: RequestResource = { group: 'resource.k8s.io', resource: 'resourceclaims', kind: 'ResourceClaim' };
const templates: RequestResource = { group: 'resource.k8s.io', resource: 'resourceclaimtemplates', kind: 'ResourceClaimTemplate' };
const rules: RequestResource = { group: 'resource.k8s.io', resource: 'devicetaintrules', kind: 'DeviceTaintRule' };

function devicePolicy(extra: Record<string, unknown> = {}, spec: Record<string, unknown> = {}): TenancyPolicy {
  return compilePolicy('gpus', { ...labelPolicySpec(), ...spec, deviceTaint: { key, effect: 'NoSchedule', ...extra } });
}

function claim(tolerations: unknown[], ns = 'team-a'): JsonObject {
  return {
    apiVersion: 'resource.k8s.io/v1',
    kind: 'ResourceClaim',
    metadata: { name: 'gpu', namespace: ns },
    spec: { devices: { requests: [{ name: 'gpu', exactly: { deviceClassName: 'gpu.example.com', tolerations } }] } },
  };
}

function template(tolerations: unknown[]): JsonObject {
  return {
    apiVersion: 'resource.k8s.io/v1',
    kind: 'ResourceClaimTemplate',
    metadata: { name: 'gpu', namespace: 'team-a' },
    spec: {
      spec: {
        devices: {
          requests: [
            {
              name: 'r',
              firstAvailable: [
                { name: 'a', deviceClassName: 'x' },
                { name: 'b', deviceClassName: 'x', tolerations },
              ],
            },
          ],
        },
      },
    },
  };
}

const teamA = namespace('team-a', { dedicated: 'a' });

function judge(
  object: JsonObject,
  options: {
    policy?: TenancyPolicy;
    ns?: ReturnType<typeof namespace>;
    resource?: RequestResource;
    operation?: Operation;
    oldObject?: JsonObject;
    user?: UserInfo;
    gate?: boolean;
  } = {},
): ValidationOutcome {
  const plugin = createDedicatedNodes(() => createPolicySet([options.policy ?? devicePolicy()]).set);
  const base = admissionAttributes(
    options.resource ?? claims,
    options.operation ?? 'CREATE',
    object,
    options.oldObject === undefined ? {} : { oldObject: options.oldObject },
  );
  const attributes = { ...base, ...(options.user === undefined ? {} : { userInfo: options.user }) };
  assert.ok(plugin.handles(attributes));
  return plugin.validate(
    object,
    attributes,
    pluginContext({ namespace: options.ns ?? teamA, gates: { DRADeviceTaints: options.gate ?? true } }),
  );
}

function message(outcome: ValidationOutcome): string {
  assert.ok(outcome.denial !== undefined, `denied: ${JSON.stringify(outcome)}`);
  return denialStatus(outcome.denial).message;
}

describe("tenancy for devices: a tenant claim may not tolerate another group's device taint", () => {
  it("the own group's device toleration is allowed", () => {
    const outcome = judge(claim([{ key, operator: 'Equal', value: 'a', effect: 'NoSchedule' }]));
    assert.equal(outcome.denial, undefined);
    assert.equal(outcome.auditAnnotations?.['dedicated-devices-decision'], 'allowed');
  });

  const foreign: [string, unknown, RegExp][] = [
    ['Equal to another group', { key, operator: 'Equal', value: 'b', effect: 'NoSchedule' }, /tolerates the device taint of group "b"/],
    ['Exists on the key', { key, operator: 'Exists', effect: 'NoSchedule' }, /tolerates the device taint of every group/],
    ['Exists without a key (wildcard)', { operator: 'Exists' }, /tolerates the device taint of every group/],
    ['an empty effect', { key, operator: 'Equal', value: 'b' }, /group "b"/],
    ['an empty key with Equal (accepted for devices, unlike pods)', { operator: 'Equal', value: 'b', effect: 'NoSchedule' }, /group "b"/],
  ];
  for (const [name, toleration, expected] of foreign) {
    it(`refused: ${name}`, () => {
      const text = message(judge(claim([toleration])));
      assert.match(text, /^resourceclaims\.resource\.k8s\.io "gpu" is forbidden: spec\.devices\.requests\[0\]\.exactly\.tolerations\[0\] /);
      assert.match(text, expected);
      assert.match(text, /namespace "team-a" belongs to group "a", and only an infrastructure namespace may reach other groups' devices/);
    });
  }

  it("not foreign: another effect than the group's, another key, the own group, an empty value", () => {
    for (const toleration of [
      { key, operator: 'Exists', effect: 'NoExecute' },
      { key: 'example.com/maintenance', operator: 'Exists' },
      { key, operator: 'Equal', value: 'a' },
      { operator: 'Equal', value: '', effect: 'NoSchedule' },
    ]) {
      assert.equal(judge(claim([toleration])).denial, undefined, JSON.stringify(toleration));
    }
  });

  it('a template is judged in every firstAvailable subrequest, at its own path', () => {
    const text = message(judge(template([{ key, operator: 'Exists' }]), { resource: templates }));
    assert.match(
      text,
      /spec\.spec\.devices\.requests\[0\]\.firstAvailable\[1\]\.tolerations\[0\] tolerates the device taint of every group/,
    );
  });

  it("a namespace of no group may tolerate no group's device taint", () => {
    const text = message(judge(claim([{ key, operator: 'Equal', value: 'a' }], 'shared'), { ns: namespace('shared') }));
    assert.match(text, /namespace "shared" belongs to no group/);
  });

  it('an infrastructure namespace may, and the audit annotation says so', () => {
    const outcome = judge(claim([{ operator: 'Exists' }], 'gpu-operator'), {
      ns: namespace('gpu-operator', { 'tolerator.dev/node-infrastructure': 'true' }),
    });
    assert.equal(outcome.denial, undefined);
    assert.match(outcome.auditAnnotations?.['dedicated-devices-infrastructure'] ?? '', /^allowed for an infrastructure namespace: gpus: /);
  });

  it('a claim created by a platform identity in a tenant namespace is refused too: exempt does not apply to claims (any pod of the namespace may use it)', () => {
    const policy = devicePolicy({}, { exempt: "request.userInfo.groups.exists(g, g == 'platform-admins')" });
    const user: UserInfo = { username: 'alice', uid: '1', groups: ['platform-admins'], extra: {} };
    const text = message(judge(claim([{ key, operator: 'Equal', value: 'b' }]), { policy, user }));
    assert.match(text, /group "b"/);
  });

  it('enforcement Warn: admitted with the violation as a warning', () => {
    const outcome = judge(claim([{ operator: 'Exists' }]), { policy: devicePolicy({}, { enforcement: 'Warn' }) });
    assert.equal(outcome.denial, undefined);
    assert.match(outcome.warnings?.[0] ?? '', /^DedicatedNodes \(enforcement Warn, policy "gpus"\): spec\.devices/);
  });

  it("gate view skew: a foreign device toleration that reaches the validating webhook is refused even where tolerator's view of DRADeviceTaints is off (the API server drops them when its gate is off, so one that arrives was kept: a replica with the gate on in a mixed-version upgrade, or a --feature-gates pinned wrong)", () => {
    assert.match(message(judge(claim([{ operator: 'Exists' }]), { gate: false })), /tolerates the device taint of every group/);
    // Nothing to judge in a claim without device tolerations, whatever the gate.
    assert.equal(judge(claim([]), { gate: false }).denial, undefined);
  });

  it('a policy without deviceTaint judges no claim', () => {
    assert.deepEqual(judge(claim([{ operator: 'Exists' }]), { policy: compilePolicy('nodes-only') }), {});
  });

  it('a thousand foreign tolerations: the denial spells out ten and counts the rest', () => {
    const many = Array.from({ length: 1000 }, () => ({ operator: 'Exists' }));
    const text = message(judge(claim(many)));
    assert.match(text, /and 990 more violations of the same kinds$/);
    assert.ok(text.length < 8_000, String(text.length));
  });
});

describe("tenancy for devices: a DeviceTaintRule that reaches the groups' devices needs a platform identity", () => {
  const operator: UserInfo = { username: 'gpu-health', uid: '2', groups: ['system:serviceaccounts'], extra: {} };
  const admin: UserInfo = { username: 'root', uid: '3', groups: ['system:masters'], extra: {} };
  const platform: UserInfo = { username: 'pat', uid: '4', groups: ['platform-admins'], extra: {} };
  function rule(selector: Record<string, string> | undefined, taintKey: string, effect = 'NoSchedule'): JsonObject {
    return {
      apiVersion: 'resource.k8s.io/v1',
      kind: 'DeviceTaintRule',
      metadata: { name: 'r' },
      spec: { ...(selector === undefined ? {} : { deviceSelector: selector }), taint: { key: taintKey, value: 'b', effect } },
    };
  }
  const policy = devicePolicy({ platformGroups: ['platform-admins'] });
  const asRule = { resource: rules, policy, ns: undefined };

  it('the group device-taint key, from a non-platform identity: refused', () => {
    const text = message(judge(rule({ driver: 'gpu.example.com', pool: 'worker-0' }, key), { ...asRule, user: operator }));
    assert.match(
      text,
      /^devicetaintrules\.resource\.k8s\.io "r" is forbidden: spec\.taint\.key is "gpu\.example\.com\/dedicated", the device-taint key of the groups/,
    );
    assert.match(text, /"gpu-health" is in none of the platform groups \("system:masters", "platform-admins"\)/);
  });

  it('a selector that names no pool, with NoExecute, from a non-platform identity: refused', () => {
    assert.match(
      message(judge(rule({ driver: 'gpu.example.com' }, 'example.com/xid', 'NoExecute'), { ...asRule, user: operator })),
      /names driver "gpu\.example\.com" but no pool/,
    );
    assert.match(message(judge(rule({}, 'example.com/xid'), { ...asRule, user: operator })), /names no pool and no driver/);
  });

  it('one pool, another key: admitted from anyone', () => {
    assert.deepEqual(
      judge(rule({ driver: 'gpu.example.com', pool: 'worker-0', device: 'gpu-1' }, 'example.com/xid', 'NoExecute'), {
        ...asRule,
        user: operator,
      }),
      {},
    );
  });

  it('effect None reaches nothing: admitted', () => {
    assert.deepEqual(judge(rule(undefined, key, 'None'), { ...asRule, user: operator }), {});
  });

  it("system:masters and the policy's platformGroups may", () => {
    assert.deepEqual(judge(rule({ driver: 'gpu.example.com' }, key), { ...asRule, user: admin }), {});
    assert.deepEqual(judge(rule({ driver: 'gpu.example.com' }, key), { ...asRule, user: platform }), {});
  });

  it('an UPDATE that leaves the spec alone is admitted; one that changes it is judged', () => {
    const stored = rule({ driver: 'gpu.example.com' }, key);
    const relabelled = { ...stored, metadata: { name: 'r', labels: { x: 'y' } } };
    assert.deepEqual(judge(relabelled, { ...asRule, user: operator, operation: 'UPDATE', oldObject: stored }), {});
    const narrowed = rule({ driver: 'gpu.example.com', pool: 'p' }, 'example.com/xid');
    assert.match(message(judge(stored, { ...asRule, user: operator, operation: 'UPDATE', oldObject: narrowed })), /device-taint key/);
  });
});

describe('TenancyPolicy spec.deviceTaint', () => {
  it('loads key, effect and platformGroups', () => {
    assert.deepEqual(devicePolicy({ platformGroups: ['p'] }).deviceTaint, { key, effect: 'NoSchedule', platformGroups: ['p'] });
  });

  it('refuses a value, effect None and an unknown field, each by name', () => {
    assert.throws(
      () => devicePolicy({ value: 'a' }),
      /spec\.deviceTaint\.value: must not be set: the value of the device taint is the group/,
    );
    assert.throws(() => devicePolicy({ effect: 'None' }), /spec\.deviceTaint\.effect: unsupported value "None"/);
    assert.throws(() => devicePolicy({ drivers: [] }), /spec\.deviceTaint\.drivers: unknown field/);
    assert.throws(() => devicePolicy({ key: 'a b' }), /spec\.deviceTaint\.key: must be a qualified name/);
    assert.throws(() => devicePolicy({ platformGroups: 'x' }), /spec\.deviceTaint\.platformGroups: must be a list/);
  });
});
