/**
 * The offline commands know tenancy for devices: `explain` explains a ResourceClaim,
 * ResourceClaimTemplate or DeviceTaintRule as itself, `review` answers an AdmissionReview of one as
 * the server would, `simulate` says why it does not place them, and `export` refuses a policy with
 * spec.deviceTaint with its reason.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { explainCommand } from '../../src/cli/explain.js';
import { exportCommand } from '../../src/cli/export.js';
import { reviewCommand } from '../../src/cli/review.js';
import { simulateCommand } from '../../src/cli/simulate.js';
import { runCommand } from '../support/command-io.js';
import { labelPolicySpec, policyDocument } from '../tenancy/tenancy-fixtures.js';

const key = 'gpu.example.com/dedicated';
function withoutExempt(): Record<string, unknown> {
  const { exempt: _exempt, ...spec } = labelPolicySpec();
  return spec;
}
const dir = mkdtempSync(join(tmpdir(), 'tolerator-device-commands-'));
const policies = join(dir, 'policies');
mkdirSync(policies);
writeFileSync(
  join(policies, 'gpus.yaml'),
  stringify(
    policyDocument('gpus', { ...withoutExempt(), deviceTaint: { key, effect: 'NoSchedule', platformGroups: ['platform-admins'] } }),
  ),
);
const state = join(dir, 'state.yaml');
const nodes = join(dir, 'nodes.yaml');
writeFileSync(nodes, stringify({ apiVersion: 'v1', kind: 'Node', metadata: { name: 'worker-a', labels: { dedicated: 'a' } } }));
writeFileSync(
  state,
  stringify({
    apiVersion: 'v1',
    kind: 'List',
    items: [
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'team-a', labels: { dedicated: 'a' } } },
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'team-b', labels: { dedicated: 'b' } } },
    ],
  }),
);
after(() => {
  rmSync(dir, { recursive: true, force: true });
});

const common = ['--policies', policies, '--cluster-state', state, '--feature-gates', 'DRADeviceTaints=true'];

function claim(ns: string, tolerations: unknown[]): Record<string, unknown> {
  return {
    apiVersion: 'resource.k8s.io/v1',
    kind: 'ResourceClaim',
    metadata: { name: 'gpu', namespace: ns },
    spec: { devices: { requests: [{ name: 'gpu', exactly: { deviceClassName: 'gpu.example.com', tolerations } }] } },
  };
}

const stealing = claim('team-b', [{ key, operator: 'Equal', value: 'a', effect: 'NoSchedule' }]);
const rule = {
  apiVersion: 'resource.k8s.io/v1',
  kind: 'DeviceTaintRule',
  metadata: { name: 'regroup' },
  spec: { deviceSelector: { driver: 'gpu.example.com', pool: 'worker-a' }, taint: { key, value: 'b', effect: 'NoSchedule' } },
};

describe('explain knows ResourceClaims and DeviceTaintRules', () => {
  it("a tenant claim tolerating another group's device taint: its group, and the denial", async () => {
    const { code, stdout } = await runCommand(explainCommand, [...common, '-'], {}, { stdin: stringify(stealing) });
    assert.equal(code, 1, stdout);
    assert.match(stdout, /^ResourceClaim team-b\/gpu\n {2}namespace team-b: group "b" \(policy gpus\)\n/m);
    assert.match(
      stdout,
      /DedicatedNodes denies: resourceclaims\.resource\.k8s\.io "gpu" is forbidden: spec\.devices\.requests\[0\]\.exactly\.tolerations\[0\] tolerates the device taint of group "a"/,
    );
    assert.match(stdout, /result: denied by DedicatedNodes/);
  });

  it("the own group's claim is allowed", async () => {
    const own = claim('team-a', [{ key, operator: 'Equal', value: 'a', effect: 'NoSchedule' }]);
    const { code, stdout } = await runCommand(explainCommand, [...common, '-'], {}, { stdin: stringify(own) });
    assert.equal(code, 0, stdout);
    assert.match(stdout, /result: allowed, unchanged/);
  });

  it("with DRADeviceTaints off, a claim tolerating another group's device taint is allowed as the API server stores it: its PrepareForCreate drops device tolerations after the mutating webhooks, before validation", async () => {
    const gateOff = common.map((arg) => (arg === 'DRADeviceTaints=true' ? 'DRADeviceTaints=false' : arg));
    const { code, stdout } = await runCommand(explainCommand, [...gateOff, '-'], {}, { stdin: stringify(stealing) });
    assert.equal(code, 0, stdout);
    assert.match(stdout, /result: allowed/);
    assert.doesNotMatch(stdout, /denies/);
  });

  it('a DeviceTaintRule with the group key: refused offline, where no requester is a platform identity', async () => {
    const { code, stdout } = await runCommand(explainCommand, [...common, '-'], {}, { stdin: stringify(rule) });
    assert.equal(code, 1, stdout);
    assert.match(
      stdout,
      /^DeviceTaintRule regroup\n {2}DedicatedNodes denies: devicetaintrules\.resource\.k8s\.io "regroup" is forbidden: spec\.taint\.key is "gpu\.example\.com\/dedicated".*its requester is unknown/,
    );
  });
});

describe('review answers an AdmissionReview of a DRA object as the server would', () => {
  const reviewOf = (object: Record<string, unknown>, resource: string, groups: string[]): string =>
    JSON.stringify({
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      request: {
        uid: 'u',
        kind: { group: 'resource.k8s.io', version: 'v1', kind: object.kind },
        resource: { group: 'resource.k8s.io', version: 'v1', resource },
        namespace: (object.metadata as { namespace?: string }).namespace ?? '',
        name: (object.metadata as { name: string }).name,
        operation: 'CREATE',
        userInfo: { username: 'someone', groups },
        object,
      },
    });

  it("a tenant claim tolerating another group's device taint: denied, 403", async () => {
    const { code, stdout } = await runCommand(
      reviewCommand,
      [...common, '--webhook', 'validate', '-'],
      {},
      { stdin: reviewOf(stealing, 'resourceclaims', []) },
    );
    assert.equal(code, 1);
    const response = (JSON.parse(stdout) as { response: { allowed: boolean; status: { code: number; message: string } } }).response;
    assert.equal(response.allowed, false);
    assert.equal(response.status.code, 403);
    assert.match(response.status.message, /tolerates the device taint of group "a"/);
  });

  it("a claim both invalid and foreign: 422 from the API server's own validation, not 403, on both sides and on the validating one alone", async () => {
    // kube-apiserver validates the object after the mutating webhooks and before the validating
    // ones (generic/registry/store.go Create: BeforeCreate, then createValidation): the invalid key
    // is refused 422 and tolerator's validating webhook, which would say 403, is never called.
    const invalidAndForeign = claim('team-b', [
      { key, operator: 'Equal', value: 'a', effect: 'NoSchedule' },
      { key: 'bad key!', operator: 'Exists', effect: 'NoSchedule' },
    ]);
    for (const sides of [[], ['--webhook', 'validate']]) {
      const { code, stdout } = await runCommand(
        reviewCommand,
        [...common, ...sides, '-'],
        {},
        { stdin: reviewOf(invalidAndForeign, 'resourceclaims', []) },
      );
      assert.equal(code, 1, stdout);
      const status = (JSON.parse(stdout) as { response: { status: { code: number; reason: string; message: string } } }).response.status;
      assert.equal(status.code, 422, JSON.stringify(sides));
      assert.equal(status.reason, 'Invalid');
      assert.match(
        status.message,
        /^ResourceClaim\.resource\.k8s\.io "gpu" is invalid: spec\.devices\.requests\[0\]\.exactly\.tolerations\[1\]\.key: Invalid value: "bad key!"/,
      );
    }
    const explained = await runCommand(explainCommand, [...common, '-'], {}, { stdin: stringify(invalidAndForeign) });
    assert.equal(explained.code, 1, explained.stdout);
    assert.match(
      explained.stdout,
      /^ {2}namespace team-b: not judged for a group: the API server's own validation refuses the object before any validating webhook\n {2}DeviceTolerationValidation denies: ResourceClaim\.resource\.k8s\.io "gpu" is invalid/m,
    );
    assert.match(explained.stdout, /result: denied by DeviceTolerationValidation$/m);
    assert.doesNotMatch(explained.stdout, /DedicatedNodes denies/);
  });

  it('a DeviceTaintRule with the group key: denied from an operator, allowed from platform-admins', async () => {
    const denied = await runCommand(
      reviewCommand,
      [...common, '--webhook', 'validate', '-'],
      {},
      { stdin: reviewOf(rule, 'devicetaintrules', ['operators']) },
    );
    assert.equal(denied.code, 1, denied.stdout);
    assert.match(denied.stdout, /\\"someone\\" is in none of the platform groups/);
    const allowed = await runCommand(
      reviewCommand,
      [...common, '--webhook', 'validate', '-'],
      {},
      { stdin: reviewOf(rule, 'devicetaintrules', ['platform-admins']) },
    );
    assert.equal(allowed.code, 0, allowed.stdout);
  });
});

describe('simulate says why it does not place DRA objects', () => {
  it('a ResourceClaim is named with the reason, and explain pointed to', async () => {
    const input =
      stringify(stealing) +
      '---\n' +
      stringify({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'p', namespace: 'team-a' },
        spec: { containers: [{ name: 'c', image: 'i' }] },
      });
    const { stderr } = await runCommand(simulateCommand, ['--cluster-state', state, '--nodes', nodes, '-'], {}, { stdin: input });
    assert.match(
      stderr,
      /resource\.k8s\.io\/v1 ResourceClaim not simulated: simulate places pods on nodes and reads no ResourceSlices; run tolerator explain on it/,
    );
  });
});

describe('export refuses tenancy for devices with its reason', () => {
  it('a policy with spec.deviceTaint: refused, exit 2, the reason named', async () => {
    const { code, stderr } = await runCommand(exportCommand, ['--policies', policies]);
    assert.equal(code, 2);
    assert.match(
      stderr,
      /TenancyPolicy gpus: not exported: spec\.deviceTaint \(tenancy for DRA devices\) is not reproduced by an admission policy/,
    );
  });
});
