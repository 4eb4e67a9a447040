/**
 * DRA device taints and tolerations (KEP-5055) on a real control plane, 1.36 and 1.37, with the
 * shipped webhooks: no kubelet and no device, as upstream's own integration tests do it — a Node
 * made Ready by hand, a ResourceSlice of a fake driver published by hand, a DeviceClass, claims and
 * pods; the real kube-scheduler allocates the devices and the real device taint eviction
 * controller (kube-controller-manager) evicts.
 *
 * 1. Validation, differential: for every claim and template of a corpus, the API server alone is
 *    the reference (its own validation runs before any validating webhook, so it answers a bad
 *    object without calling tolerator), and tolerator's verdict on the same object, asked as the
 *    API server asks it, must be the API server's answer word for word: code, reason, message and
 *    causes; what the API server admits, tolerator admits.
 * 2. DeviceTaintRuleSafety through the API server: the shapes it refuses, and the None → NoExecute
 *    dry run it requires, with the controller's own simulation in the rule's status.
 * 3. Allocation and eviction: a NoSchedule taint in the slice keeps an untolerating claim's pod
 *    unschedulable; an empty-effect toleration is allocated a NoExecute-tainted device and its pod
 *    is evicted, while a NoExecute toleration keeps its pod.
 * 4. Tenancy for devices (TenancyPolicy spec.deviceTaint): two groups' GPUs on one node of group a,
 *    a tenant claim tolerating group b's device taint refused through the shipped webhook, the
 *    allowed one allocated by kube-scheduler, a DeviceTaintRule with the group key refused from an
 *    identity outside the platform groups, and the audit's finding on an allocated claim whose
 *    namespace changed group.
 *
 * 1.35 has DRADeviceTaints alpha and off (the API server drops device tolerations): the suite skips
 * there with one line.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Agent } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { parseKubernetesVersion, type KubernetesVersion } from '../../src/api/feature-gate-history.js';
import { REPO_ROOT, findControlPlane, skipWithoutControlPlane } from '../cluster/binaries.js';
import { createFakeNodes } from '../cluster/fake-node.js';
import {
  apiError,
  asKubernetesObject,
  clientsFor,
  createObject,
  getFromTolerator,
  plain,
  refusal,
  startToleratorOnCluster,
  type Manifest,
  type ToleratorOnCluster,
} from '../cluster/tolerator-on-cluster.js';
import { reviewCommand } from '../../src/cli/review.js';
import { offlineReview } from '../../src/plugins/admission-request.js';
import { runCommand } from '../support/command-io.js';
import { callServe } from '../support/serve-process.js';

function versionUnderTest(): KubernetesVersion | undefined {
  const built = findControlPlane();
  return typeof built === 'string' ? undefined : parseKubernetesVersion({ gitVersion: built.version });
}

const version = versionUnderTest();
const skip =
  skipWithoutControlPlane() ||
  (version !== undefined && version.minor < 36
    ? `Kubernetes 1.${version.minor} has DRADeviceTaints alpha and off (device tolerations are dropped): run with --version 1.36 or 1.37`
    : false);

/** DeviceTaintRule's version: v1beta2 (behind a beta API and gate, both off by default) in 1.36, v1 in 1.37. */
const ruleApiVersion = version !== undefined && version.minor >= 37 ? 'resource.k8s.io/v1' : 'resource.k8s.io/v1beta2';
const plane =
  version !== undefined && version.minor >= 37
    ? {}
    : { featureGates: 'DRADeviceTaintRules=true', apiserverArgs: ['--runtime-config=resource.k8s.io/v1beta2=true'] };

/**
 * Whether kube-scheduler treats an omitted DeviceTaintRule selector as every device
 * (kubernetes/kubernetes#141620): 1.35 and 1.36 (their tracker derefs a nil selector to the empty
 * one), 1.37.0; v1.37.2 has the fix (#141998: a nil selector matches no slice), read in
 * staging/src/k8s.io/dynamic-resource-allocation/resourceslice/tracker/tracker.go at both tags.
 */
const omittedSelectorBlocksAll = version !== undefined && version.minor <= 36;

const namespace = 'gpu-team';
/** The groups' device-taint key (TenancyPolicy spec.deviceTaint) and the policy that names it. */
const deviceGroupKey = 'gpu.example.com/dedicated';
const devicePolicy = {
  apiVersion: 'tolerator.dev/v1alpha1',
  kind: 'TenancyPolicy',
  metadata: { name: 'dedicated-gpus' },
  spec: {
    group: "namespaceObject.metadata.?labels['dedicated'].orValue('')",
    taint: { key: 'dedicated', effect: 'NoSchedule' },
    nodeLabel: 'dedicated',
    infrastructure: "namespaceObject.metadata.?labels['tolerator.dev/node-infrastructure'].orValue('') == 'true'",
    deviceTaint: { key: deviceGroupKey, effect: 'NoSchedule', platformGroups: ['platform-admins'] },
  },
};
const driver = 'gpu.example.com';
const node = 'worker-0';
const taintKey = 'example.com/maintenance';

interface Verdict {
  readonly allowed: boolean;
  readonly warnings?: string[];
  readonly status?: { code?: number; reason?: string; message?: string; details?: unknown };
}

function claim(name: string, tolerations: unknown[] | undefined, deviceName?: string): Manifest {
  return {
    apiVersion: 'resource.k8s.io/v1',
    kind: 'ResourceClaim',
    metadata: { name, namespace },
    spec: {
      devices: {
        requests: [
          {
            name: 'gpu',
            exactly: {
              deviceClassName: driver,
              ...(deviceName === undefined
                ? {}
                : { selectors: [{ cel: { expression: `device.attributes["${driver}"].slot == "gpu-${deviceName}"` } }] }),
              ...(tolerations === undefined ? {} : { tolerations }),
            },
          },
        ],
      },
    },
  };
}

function template(name: string, tolerations: unknown[], deviceClassName = driver): Manifest {
  return {
    apiVersion: 'resource.k8s.io/v1',
    kind: 'ResourceClaimTemplate',
    metadata: { name, namespace },
    spec: {
      spec: {
        devices: {
          requests: [
            { name: 'first', firstAvailable: [{ name: 'gpu', deviceClassName, tolerations }] },
            { name: 'exact', exactly: { deviceClassName, tolerations } },
          ],
        },
      },
    },
  };
}

function pod(name: string, claimName: string): Manifest {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace },
    spec: {
      resourceClaims: [{ name: 'gpu', resourceClaimName: claimName }],
      containers: [{ name: 'app', image: 'registry.example/app:1', resources: { claims: [{ name: 'gpu' }] } }],
      terminationGracePeriodSeconds: 0,
    },
  };
}

function slice(taints: Record<number, unknown[]>): Manifest {
  return {
    apiVersion: 'resource.k8s.io/v1',
    kind: 'ResourceSlice',
    metadata: { name: `${node}-gpus` },
    spec: {
      driver,
      nodeName: node,
      pool: { name: node, generation: 1, resourceSliceCount: 1 },
      devices: [0, 1, 2, 3, 4, 5].map((index) => ({
        name: `gpu-${index}`,
        // A string attribute: client-node's serializer loses an `int` one (its model calls it `_int`).
        attributes: { slot: { string: `gpu-${index}` } },
        ...(taints[index] === undefined ? {} : { taints: taints[index] }),
      })),
    },
  };
}

/** tolerator's validating verdict on `object`, asked as the API server asks it (an AdmissionReview posted to /validate). */
async function validatingVerdict(cluster: ToleratorOnCluster, object: Manifest): Promise<Verdict> {
  const served = cluster.tolerator();
  assert.ok(served, 'tolerator is running');
  const resource = {
    group: 'resource.k8s.io',
    version: 'v1',
    resource: object.kind === 'ResourceClaim' ? 'resourceclaims' : 'resourceclaimtemplates',
  };
  const kind = { group: 'resource.k8s.io', version: 'v1', kind: object.kind };
  const review = {
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid: randomUUID(),
      kind,
      resource,
      requestKind: kind,
      requestResource: resource,
      name: object.metadata.name,
      namespace,
      operation: 'CREATE',
      userInfo: { username: 'admin', groups: ['system:masters', 'system:authenticated'] },
      object,
      oldObject: null,
      dryRun: true,
      options: null,
    },
  };
  const agent = new Agent({ ca: cluster.serving.ca.cert });
  const answer = await callServe(agent, served.port, '/validate', JSON.stringify(review));
  agent.destroy();
  assert.equal(answer.status, 200, answer.body);
  return (JSON.parse(answer.body) as { response: Verdict }).response;
}

function seen(status: Verdict['status']): unknown {
  return { code: status?.code, reason: status?.reason, message: status?.message, details: status?.details };
}

/** The object as the API server stores it after defaulting (a dry run): what a validating webhook receives. */
async function asStored(
  cluster: ToleratorOnCluster,
  object: Manifest,
): Promise<{ stored: Manifest; refused?: undefined } | { stored?: undefined; refused: ReturnType<typeof apiError> }> {
  try {
    return { stored: await createObject(cluster.objects, object, 'All') };
  } catch (error) {
    return { refused: apiError(error) };
  }
}

async function readObject(
  cluster: ToleratorOnCluster,
  apiVersion: string,
  kind: string,
  name: string,
  ns?: string,
): Promise<Manifest | undefined> {
  try {
    return plain(
      await cluster.objects.read({ apiVersion, kind, metadata: { name, ...(ns === undefined ? {} : { namespace: ns }) } }),
    ) as Manifest;
  } catch (error) {
    if (apiError(error).code === 404) return undefined;
    throw error;
  }
}

async function until<T>(what: string, seconds: number, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + seconds * 1000;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${seconds} s`);
    await sleep(500);
  }
}

/** Deletion by the device taint eviction controller: a deletionTimestamp (no kubelet finishes it) or the pod gone. */
async function evicted(cluster: ToleratorOnCluster, name: string): Promise<boolean> {
  const current = await readObject(cluster, 'v1', 'Pod', name, namespace);
  return current === undefined || (current.metadata as { deletionTimestamp?: string }).deletionTimestamp !== undefined;
}

/** The corpus, and which the API server refuses (`refused`): the test fails if it answers otherwise. */
const corpus: { readonly name: string; readonly tolerations: unknown[]; readonly refused?: true }[] = [
  { name: 'gt-operator', tolerations: [{ key: taintKey, operator: 'Gt', value: '1', effect: 'NoSchedule' }], refused: true },
  { name: 'lower-case-operator', tolerations: [{ key: taintKey, operator: 'exists' }], refused: true },
  { name: 'prefer-no-schedule', tolerations: [{ key: taintKey, operator: 'Exists', effect: 'PreferNoSchedule' }], refused: true },
  { name: 'exists-with-value', tolerations: [{ key: taintKey, operator: 'Exists', value: 'x' }], refused: true },
  { name: 'bad-key', tolerations: [{ key: 'bad key!', operator: 'Exists' }], refused: true },
  { name: 'two-slashes', tolerations: [{ key: 'a/b/c', operator: 'Exists' }], refused: true },
  { name: 'long-key', tolerations: [{ key: `example.com/${'k'.repeat(64)}`, operator: 'Exists' }], refused: true },
  { name: 'bad-value', tolerations: [{ key: taintKey, operator: 'Equal', value: '-x-' }], refused: true },
  { name: 'long-bad-value', tolerations: [{ key: taintKey, operator: 'Equal', value: `${'v'.repeat(64)}-` }], refused: true },
  { name: 'everything-wrong', tolerations: [{ key: 'a/b/c', operator: 'Exists', value: 'x', effect: 'Sometimes' }], refused: true },
  {
    name: 'two-bad',
    tolerations: [
      { key: taintKey, operator: 'Lt', value: '1' },
      { key: taintKey, operator: 'Exists', effect: 'NoExecute' },
      { key: 'x y', operator: 'Equal', value: 'a b', effect: 'PreferNoSchedule' },
    ],
    refused: true,
  },
  // Admitted, although a pod toleration would not be:
  { name: 'none-effect', tolerations: [{ key: taintKey, operator: 'Exists', effect: 'None' }] },
  { name: 'empty-key-equal', tolerations: [{ operator: 'Equal', value: '', effect: 'NoSchedule' }] },
  { name: 'seconds-without-noexecute', tolerations: [{ key: taintKey, operator: 'Exists', effect: 'NoSchedule', tolerationSeconds: 5 }] },
  { name: 'no-operator-defaults-to-equal', tolerations: [{ key: taintKey, value: 'x' }] },
  {
    name: 'seventeen-tolerations',
    tolerations: Array.from({ length: 17 }, (_, i) => ({ key: `example.com/t${i}`, operator: 'Exists', effect: 'NoSchedule' })),
  },
  { name: 'empty-effect', tolerations: [{ key: taintKey, operator: 'Exists' }] },
];

describe('DRA device taints on a real control plane: validation, DeviceTaintRule safety, allocation and eviction', { skip }, () => {
  let dir: string;
  let policies: string;
  let cluster: ToleratorOnCluster;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tolerator-e2e-devices-'));
    policies = join(dir, 'policies');
    mkdirSync(policies);
    writeFileSync(join(policies, 'dedicated-gpus.json'), JSON.stringify(devicePolicy));
    cluster = await startToleratorOnCluster({
      dir,
      plane: { ...plane, scheduler: true, controllerManager: true },
      // deploy/overlays/audit's ClusterRole (list pods and ResourceClaims) and the periodic audit
      // every 5 s, which must find the claim the last tenancy case makes foreign. Without the audit
      // Lease (its Role is not among what this harness installs; audit-lease.e2e.ts tests it): one
      // replica, which audits.
      overlay: 'audit',
      serveArgs: ['--policies', policies, '--audit-interval', '5s', '--audit-lease='],
    });
    await createObject(cluster.objects, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } });
    await createFakeNodes(cluster.objects, { [node]: {} });
    await createObject(cluster.objects, {
      apiVersion: 'resource.k8s.io/v1',
      kind: 'DeviceClass',
      metadata: { name: driver },
      spec: { selectors: [{ cel: { expression: `device.driver == "${driver}"` } }] },
    });
    // gpu-0 is tainted NoSchedule in the slice; gpu-1..3 are where the eviction cases land.
    await createObject(cluster.objects, slice({ 0: [{ key: taintKey, value: 'slice', effect: 'NoSchedule' }] }));
  });

  after(async () => {
    await (cluster as ToleratorOnCluster | undefined)?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  describe('validation: the API server alone is the reference', () => {
    for (const kind of ['ResourceClaim', 'ResourceClaimTemplate'] as const) {
      for (const row of corpus) {
        it(`${kind} ${row.name}: tolerator answers as the API server does`, async () => {
          const object = kind === 'ResourceClaim' ? claim(row.name, row.tolerations) : template(row.name, row.tolerations);
          const { stored, refused } = await asStored(cluster, object);
          assert.equal(refused !== undefined, row.refused === true, `the API server ${refused === undefined ? 'admitted' : 'refused'} it`);
          if (refused !== undefined) {
            assert.equal(refused.code, 422, JSON.stringify(refused.status));
            // The API server refused it itself: tolerator, asked about the same object, must say the same.
            const verdict = await validatingVerdict(cluster, object);
            assert.equal(verdict.allowed, false);
            assert.deepEqual(seen(verdict.status), seen(refused.status as Verdict['status']));
          } else {
            // Admitted by the API server (and, in this dry run, by the shipped webhooks): tolerator admits
            // the object the API server stored, as its webhook received it.
            const verdict = await validatingVerdict(cluster, stored);
            assert.equal(verdict.allowed, true, JSON.stringify(verdict.status));
          }
        });
      }
    }

    it('17 tolerations in one request are admitted: the documented limit of 16 is not enforced', async () => {
      const many = corpus.find((row) => row.name === 'seventeen-tolerations')!;
      const { stored, refused } = await asStored(cluster, claim('seventeen', many.tolerations));
      assert.ok(stored !== undefined, JSON.stringify(refused));
      const requests = (stored.spec as { devices: { requests: { exactly: { tolerations: unknown[] } }[] } }).devices.requests;
      assert.equal(requests[0]!.exactly.tolerations.length, 17);
    });

    it('an omitted operator is defaulted to Equal before any webhook sees it', async () => {
      const { stored, refused } = await asStored(cluster, claim('defaulted', [{ key: taintKey, value: 'x' }]));
      assert.ok(stored !== undefined, JSON.stringify(refused));
      const requests = (stored.spec as { devices: { requests: { exactly: { tolerations: { operator?: string }[] } }[] } }).devices.requests;
      assert.equal(requests[0]!.exactly.tolerations[0]!.operator, 'Equal');
    });

    it('a claim created through the API server reaches the validating webhook, and an empty effect earns its warning there', async () => {
      await createObject(cluster.objects, claim('reviewed', [{ key: taintKey, operator: 'Exists' }]));
      assert.ok((await cluster.reviewedSides('reviewed', 'CREATE')).includes('validate'));
      const verdict = await validatingVerdict(cluster, claim('reviewed-2', [{ key: taintKey, operator: 'Exists' }]));
      assert.equal(verdict.allowed, true);
      assert.match(verdict.warnings?.[0] ?? '', /honours only effect NoExecute/);
    });
  });

  describe('DeviceTolerationRestriction: defaults and the allow-list of a namespace', () => {
    const defaulted = 'ml-team';
    const grace = { key: taintKey, operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 600 };
    before(async () => {
      await createObject(cluster.objects, {
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: {
          name: defaulted,
          annotations: {
            'tolerator.dev/default-device-tolerations': JSON.stringify([grace]),
            'tolerator.dev/device-tolerations-whitelist': JSON.stringify([
              { key: taintKey, operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 3600 },
            ]),
          },
        },
      });
    });

    it('a template gets the default; the claim the resourceclaim controller makes from it for a pod carries it exactly once', async () => {
      // A class no device has: the resourceclaim controller makes the claim when the pod is created,
      // and the pod then stays unscheduled, leaving the GPUs to the tests below.
      const stored = await createObject(cluster.objects, {
        ...template('one-gpu', [], 'none.example.com'),
        metadata: { name: 'one-gpu', namespace: defaulted },
      });
      const requests = (
        stored.spec as {
          spec: { devices: { requests: { firstAvailable?: { tolerations?: unknown[] }[]; exactly?: { tolerations?: unknown[] } }[] } };
        }
      ).spec.devices.requests;
      assert.deepEqual(requests[0]!.firstAvailable![0]!.tolerations, [grace]);
      assert.deepEqual(requests[1]!.exactly!.tolerations, [grace]);
      await createObject(cluster.objects, {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'from-template', namespace: defaulted },
        spec: {
          resourceClaims: [{ name: 'gpu', resourceClaimTemplateName: 'one-gpu' }],
          containers: [{ name: 'app', image: 'registry.example/app:1', resources: { claims: [{ name: 'gpu' }] } }],
        },
      });
      const claimName = await until('the resourceclaim controller makes the claim', 60, async () => {
        const current = await readObject(cluster, 'v1', 'Pod', 'from-template', defaulted);
        return (current?.status as { resourceClaimStatuses?: { resourceClaimName?: string }[] } | undefined)?.resourceClaimStatuses?.[0]
          ?.resourceClaimName;
      });
      const made = (await readObject(cluster, 'resource.k8s.io/v1', 'ResourceClaim', claimName, defaulted))!;
      const made0 = (made.spec as { devices: { requests: { exactly?: { tolerations?: unknown[] } }[] } }).devices.requests[1]!;
      assert.deepEqual(made0.exactly!.tolerations, [grace]);
    });

    it('a claim with a device toleration outside the allow-list is refused by the validating webhook', async () => {
      const outside = {
        ...claim('outside', [{ key: 'example.com/other', operator: 'Exists', effect: 'NoExecute' }]),
        metadata: { name: 'outside', namespace: defaulted },
      };
      const { code, status } = await refusal(createObject(cluster.objects, outside, 'All'));
      assert.equal(code, 403);
      assert.match(
        status.message ?? '',
        /admission webhook "validate\.tolerator\.dev" denied the request: spec\.devices\.requests\[0\]\.exactly\.tolerations: device tolerations conflict with the allow-list of namespace "ml-team"/,
      );
    });
  });

  describe('DeviceTaintRuleSafety through the API server', () => {
    const rule = (
      name: string,
      selector: Record<string, string> | undefined,
      effect: string,
      annotations?: Record<string, string>,
    ): Manifest => ({
      apiVersion: ruleApiVersion,
      kind: 'DeviceTaintRule',
      metadata: { name, ...(annotations === undefined ? {} : { annotations }) },
      spec: { ...(selector === undefined ? {} : { deviceSelector: selector }), taint: { key: taintKey, value: 'rule', effect } },
    });

    it('an omitted deviceSelector with NoSchedule is refused with the scheduler bug named', async () => {
      const { code, status } = await refusal(createObject(cluster.objects, rule('omitted', undefined, 'NoSchedule'), 'All'));
      assert.equal(code, 403);
      assert.match(status.message ?? '', /admission webhook "devicetaintrules\.validate\.tolerator\.dev" denied the request: .*#141620/);
    });

    it('deviceSelector: {} with NoExecute is refused', async () => {
      const { code, status } = await refusal(createObject(cluster.objects, rule('everything', {}, 'NoExecute'), 'All'));
      assert.equal(code, 403);
      assert.match(status.message ?? '', /spec\.deviceSelector is empty with effect NoExecute/);
    });

    it('a NoExecute rule created directly is refused; its None dry run is admitted', async () => {
      const { code } = await refusal(
        createObject(cluster.objects, rule('direct', { driver, pool: node, device: 'gpu-5' }, 'NoExecute'), 'All'),
      );
      assert.equal(code, 403);
      await createObject(cluster.objects, rule('dry-run', { driver, pool: node, device: 'gpu-5' }, 'None'), 'All');
    });
  });

  describe('allocation by kube-scheduler and eviction by the device taint eviction controller', () => {
    it('a NoSchedule device taint in the slice: an untolerating claim is not allocated that device, a tolerating one is', async () => {
      await createObject(cluster.objects, claim('untolerating', undefined, '0'));
      await createObject(cluster.objects, claim('tolerating', [{ key: taintKey, operator: 'Exists', effect: 'NoSchedule' }], '0'));
      await createObject(cluster.objects, pod('untolerating', 'untolerating'));
      await createObject(cluster.objects, pod('tolerating', 'tolerating'));
      const bound = await until('the tolerating pod is bound', 60, async () => {
        const current = await readObject(cluster, 'v1', 'Pod', 'tolerating', namespace);
        return (current?.spec as { nodeName?: string } | undefined)?.nodeName === node ? current : undefined;
      });
      assert.ok(bound);
      const allocated = (await readObject(cluster, 'resource.k8s.io/v1', 'ResourceClaim', 'tolerating', namespace))!;
      const results = (allocated.status as { allocation: { devices: { results: { device: string; tolerations?: unknown[] }[] } } })
        .allocation.devices.results;
      assert.equal(results[0]!.device, 'gpu-0');
      assert.deepEqual(results[0]!.tolerations, [{ key: taintKey, operator: 'Exists', effect: 'NoSchedule' }]);
      const untolerating = (await readObject(cluster, 'v1', 'Pod', 'untolerating', namespace))!;
      assert.equal((untolerating.spec as { nodeName?: string }).nodeName, undefined);
      const conditions = (untolerating.status as { conditions?: { type: string; reason?: string; message?: string }[] }).conditions ?? [];
      assert.match(conditions.find((c) => c.type === 'PodScheduled')?.message ?? '', /cannot allocate all claims/);
    });

    it(`an omitted deviceSelector (kubernetes/kubernetes#141620): admitted while tolerator is down (failurePolicy Ignore), and on ${version === undefined ? '?' : `1.${version.minor}`} it ${omittedSelectorBlocksAll ? 'blocks allocation of every device' : 'matches no device, as documented'}`, async () => {
      // tolerator down: the DeviceTaintRule webhook fails open, so the rule tolerator refuses goes in.
      await cluster.stopTolerator();
      try {
        await createObject(cluster.objects, {
          apiVersion: ruleApiVersion,
          kind: 'DeviceTaintRule',
          metadata: { name: 'omitted-selector' },
          spec: { taint: { key: 'example.com/omitted', effect: 'NoSchedule' } },
        });
      } finally {
        await cluster.startTolerator();
      }
      await createObject(cluster.objects, claim('after-omitted', undefined, '3'));
      await until('the webhooks answer again', 60, async () => {
        try {
          return await createObject(cluster.objects, pod('after-omitted', 'after-omitted'));
        } catch {
          return undefined;
        }
      });
      const outcome = await until('the scheduler decides', 60, async () => {
        const current = await readObject(cluster, 'v1', 'Pod', 'after-omitted', namespace);
        if ((current?.spec as { nodeName?: string } | undefined)?.nodeName === node) return 'bound';
        const conditions = (current?.status as { conditions?: { type: string; message?: string }[] } | undefined)?.conditions ?? [];
        return /cannot allocate all claims/.test(conditions.find((c) => c.type === 'PodScheduled')?.message ?? '')
          ? 'unschedulable'
          : undefined;
      });
      assert.equal(outcome, omittedSelectorBlocksAll ? 'unschedulable' : 'bound');
      await cluster.objects.delete(
        asKubernetesObject({ apiVersion: ruleApiVersion, kind: 'DeviceTaintRule', metadata: { name: 'omitted-selector' } }),
      );
      await cluster.objects.delete(
        asKubernetesObject({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'after-omitted', namespace } }),
        undefined,
        undefined,
        0,
      );
    });

    it('None → NoExecute after the dry run: an empty-effect toleration is evicted, a NoExecute one stays', async () => {
      // The pods of the first test go (no kubelet: force-deleted), so only these two use the pool's devices.
      for (const name of ['tolerating', 'untolerating']) {
        await cluster.objects.delete(
          asKubernetesObject({ apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace } }),
          undefined,
          undefined,
          0,
        );
      }
      const selector = { driver, pool: node };
      // gpu-1 for a claim that tolerates with an empty effect, gpu-2 for one that tolerates NoExecute. No taint applies yet.
      await createObject(cluster.objects, claim('empty-effect', [{ key: taintKey, operator: 'Exists' }], '1'));
      await createObject(cluster.objects, claim('no-execute', [{ key: taintKey, operator: 'Exists', effect: 'NoExecute' }], '2'));
      await createObject(cluster.objects, pod('empty-effect', 'empty-effect'));
      await createObject(cluster.objects, pod('no-execute', 'no-execute'));
      for (const name of ['empty-effect', 'no-execute']) {
        await until(`${name} is bound`, 60, async () => {
          const current = await readObject(cluster, 'v1', 'Pod', name, namespace);
          return (current?.spec as { nodeName?: string } | undefined)?.nodeName === node ? true : undefined;
        });
      }

      await createObject(cluster.objects, {
        apiVersion: ruleApiVersion,
        kind: 'DeviceTaintRule',
        metadata: { name: 'drain-gpu-1' },
        spec: { deviceSelector: selector, taint: { key: taintKey, effect: 'None' } },
      });
      const simulated = await until('the controller writes its simulation of the None rule', 60, async () => {
        const current = await readObject(cluster, ruleApiVersion, 'DeviceTaintRule', 'drain-gpu-1');
        const generation = (current?.metadata as { generation?: number } | undefined)?.generation;
        const conditions = (
          current?.status as { conditions?: { type: string; reason?: string; message?: string; observedGeneration?: number }[] } | undefined
        )?.conditions;
        const condition = conditions?.find((c) => c.type === 'EvictionInProgress' && c.observedGeneration === generation);
        return condition === undefined ? undefined : { current: current!, condition };
      });
      assert.equal(simulated.condition.reason, 'NoEffect');
      // The controller's own simulation counts the empty-effect pod, and only it.
      assert.match(simulated.condition.message ?? '', /\b1 pod would be evicted/);

      // The switch, with the selector unchanged: admitted by DeviceTaintRuleSafety.
      const switched = structuredClone(simulated.current) as Manifest & { spec: { taint: { effect: string } } };
      switched.spec.taint.effect = 'NoExecute';
      await cluster.objects.replace(asKubernetesObject(switched));

      await until('the empty-effect pod is evicted', 60, async () => ((await evicted(cluster, 'empty-effect')) ? true : undefined));
      const conditions =
        (
          (await readObject(cluster, 'v1', 'Pod', 'empty-effect', namespace))?.status as
            { conditions?: { type: string; reason?: string }[] } | undefined
        )?.conditions ?? [];
      const disruption = conditions.find((c) => c.type === 'DisruptionTarget');
      if (disruption !== undefined) assert.equal(disruption.reason, 'DeletionByDeviceTaintManager');
      // The NoExecute toleration (no tolerationSeconds) is honoured: that pod stays.
      await sleep(5_000);
      assert.equal(await evicted(cluster, 'no-execute'), false);
    });
  });
  describe("tenancy for devices: two groups' GPUs, TenancyPolicy spec.deviceTaint", () => {
    const groupNode = 'worker-a';
    const gpuClaim = (name: string, ns: string, slot: string, tolerations: unknown[]): Manifest => ({
      apiVersion: 'resource.k8s.io/v1',
      kind: 'ResourceClaim',
      metadata: { name, namespace: ns },
      spec: {
        devices: {
          requests: [
            {
              name: 'gpu',
              exactly: {
                deviceClassName: driver,
                selectors: [{ cel: { expression: `device.attributes["${driver}"].slot == "${slot}"` } }],
                tolerations,
              },
            },
          ],
        },
      },
    });
    const own = { key: deviceGroupKey, operator: 'Equal', value: 'a', effect: 'NoSchedule' };

    before(async () => {
      for (const group of ['a', 'b']) {
        await createObject(cluster.objects, {
          apiVersion: 'v1',
          kind: 'Namespace',
          metadata: { name: `team-${group}`, labels: { dedicated: group } },
        });
      }
      // A node of group a (its label and taint), holding a GPU of group a and one of group b, each
      // marked by the group's device taint in the slice, as a driver (or a DeviceTaintRule) publishes it.
      await createFakeNodes(cluster.objects, {
        [groupNode]: { labels: { dedicated: 'a' }, taints: [{ key: 'dedicated', value: 'a', effect: 'NoSchedule' }] },
      });
      await createObject(cluster.objects, {
        apiVersion: 'resource.k8s.io/v1',
        kind: 'ResourceSlice',
        metadata: { name: `${groupNode}-gpus` },
        spec: {
          driver,
          nodeName: groupNode,
          pool: { name: groupNode, generation: 1, resourceSliceCount: 1 },
          devices: ['a-0', 'a-1', 'b-0'].map((slot) => ({
            name: `gpu-${slot}`,
            attributes: { slot: { string: slot } },
            taints: [{ key: deviceGroupKey, value: slot.slice(0, 1), effect: 'NoSchedule' }],
          })),
        },
      });
    });

    it("a tenant claim tolerating another group's device taint is refused by the API server through the shipped webhook, in every form", async () => {
      for (const toleration of [
        { key: deviceGroupKey, operator: 'Equal', value: 'a', effect: 'NoSchedule' },
        { key: deviceGroupKey, operator: 'Exists' },
        { operator: 'Exists' },
        { operator: 'Equal', value: 'a' },
      ]) {
        const { code, status } = await refusal(createObject(cluster.objects, gpuClaim('steal', 'team-b', 'a-0', [toleration])));
        assert.equal(code, 403, JSON.stringify(toleration));
        assert.match(
          status.message ?? '',
          /^admission webhook "validate\.tolerator\.dev" denied the request: resourceclaims\.resource\.k8s\.io "steal" is forbidden: spec\.devices\.requests\[0\]\.exactly\.tolerations\[0\] tolerates the device taint of (group "a"|every group) .*namespace "team-b" belongs to group "b"/,
          JSON.stringify(toleration),
        );
      }
    });

    it('a claim both invalid and foreign: the API server answers 422 before its validating webhook, and offline review answers the same', async () => {
      const invalidAndForeign = gpuClaim('steal-bad', 'team-b', 'a-0', [
        { key: deviceGroupKey, operator: 'Equal', value: 'a', effect: 'NoSchedule' },
        { key: 'bad key!', operator: 'Exists', effect: 'NoSchedule' },
      ]);
      const { code, status } = await refusal(createObject(cluster.objects, invalidAndForeign));
      assert.equal(code, 422, status.message);
      assert.equal(status.reason, 'Invalid');
      // The mutating webhook was called for it, the validating one never (waited for 5 s).
      assert.deepEqual(await cluster.reviewedSides('steal-bad', 'CREATE'), ['mutate']);
      const state = join(dir, 'team-b.yaml');
      writeFileSync(
        state,
        JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'team-b', labels: { dedicated: 'b' } } }),
      );
      const offline = await runCommand(
        reviewCommand,
        ['--policies', policies, '--cluster-state', state, '--feature-gates', 'DRADeviceTaints=true', '-'],
        {},
        {
          stdin: JSON.stringify(offlineReview({ operation: 'CREATE', object: invalidAndForeign, namespace: 'team-b' }, 'u')),
        },
      );
      const answer = (JSON.parse(offline.stdout) as { response: { status: { code: number; reason: string; message: string } } }).response
        .status;
      assert.deepEqual(
        { code: answer.code, reason: answer.reason, message: answer.message },
        { code, reason: status.reason, message: status.message },
      );
    });

    it("the allowed claim (its own group's device taint) is allocated its group's GPU by kube-scheduler", async () => {
      await createObject(cluster.objects, gpuClaim('own-gpu', 'team-a', 'a-0', [own]));
      // The pod gets group a's node toleration and requirement from DedicatedNodes, so it lands on worker-a.
      await createObject(cluster.objects, { ...pod('own-gpu', 'own-gpu'), metadata: { name: 'own-gpu', namespace: 'team-a' } });
      await until("the pod is bound to the group's node", 60, async () => {
        const current = await readObject(cluster, 'v1', 'Pod', 'own-gpu', 'team-a');
        return (current?.spec as { nodeName?: string } | undefined)?.nodeName === groupNode ? true : undefined;
      });
      const allocated = (await readObject(cluster, 'resource.k8s.io/v1', 'ResourceClaim', 'own-gpu', 'team-a'))!;
      const results = (allocated.status as { allocation: { devices: { results: { device: string; tolerations?: unknown[] }[] } } })
        .allocation.devices.results;
      assert.equal(results[0]!.device, 'gpu-a-0');
      assert.deepEqual(results[0]!.tolerations, [own]);
    });

    it("a DeviceTaintRule with the groups' device-taint key is refused from an identity outside the platform groups, admitted from system:masters", async () => {
      await createObject(cluster.objects, {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRole',
        metadata: { name: 'device-taints' },
        rules: [{ apiGroups: ['resource.k8s.io'], resources: ['devicetaintrules'], verbs: ['create', 'get'] }],
      });
      await createObject(cluster.objects, {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRoleBinding',
        metadata: { name: 'device-taints' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'device-taints' },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'gpu-operators' }],
      });
      const operator = clientsFor(await cluster.plane.kubeconfigFor('gpu-health', ['gpu-operators'])).objects;
      const rule = (name: string, key: string): Manifest => ({
        apiVersion: ruleApiVersion,
        kind: 'DeviceTaintRule',
        metadata: { name },
        spec: { deviceSelector: { driver, pool: groupNode, device: 'gpu-a-1' }, taint: { key, value: 'b', effect: 'NoSchedule' } },
      });
      const { code, status } = await refusal(createObject(operator, rule('regroup', deviceGroupKey)));
      assert.equal(code, 403);
      assert.match(
        status.message ?? '',
        /admission webhook "devicetaintrules\.validate\.tolerator\.dev" denied the request: .*spec\.taint\.key is "gpu\.example\.com\/dedicated", the device-taint key of the groups.*"gpu-health" is in none of the platform groups/,
      );
      // Another key on one pool's device: admitted from the same identity.
      await createObject(operator, rule('xid', 'example.com/xid'));
      await createObject(cluster.objects, rule('regroup', deviceGroupKey), 'All');
    });

    it("a pod reaches only the claims of its own namespace: another namespace's pod naming the claim is held back until a claim of that name exists in its own", async () => {
      // gpu-team has no group and worker-0 takes its pods, so only the claim can keep this pod off a node.
      await createObject(cluster.objects, pod('borrower', 'own-gpu'));
      await sleep(10_000);
      const waiting = (await readObject(cluster, 'v1', 'Pod', 'borrower', namespace))!;
      assert.equal((waiting.spec as { nodeName?: string }).nodeName, undefined, JSON.stringify(waiting.status));
      // kube-scheduler's DynamicResources PreEnqueue keeps a pod whose claim does not exist out of the
      // scheduling queue: no attempt, so no PodScheduled condition either.
      const conditions = (waiting.status as { conditions?: { type: string }[] } | undefined)?.conditions ?? [];
      assert.equal(
        conditions.find((c) => c.type === 'PodScheduled'),
        undefined,
        JSON.stringify(conditions),
      );
      // A claim of that name in the pod's own namespace (tolerating the drain rule's NoExecute taint on worker-0): now it is bound, with that claim.
      await createObject(cluster.objects, claim('own-gpu', [{ key: taintKey, operator: 'Exists', effect: 'NoExecute' }], '4'));
      await until("the borrower is bound with its own namespace's claim", 60, async () => {
        const current = await readObject(cluster, 'v1', 'Pod', 'borrower', namespace);
        return (current?.spec as { nodeName?: string } | undefined)?.nodeName === node ? true : undefined;
      });
      const own = (await readObject(cluster, 'resource.k8s.io/v1', 'ResourceClaim', 'own-gpu', namespace))!;
      const reservedFor = (own.status as { reservedFor?: { name: string }[] }).reservedFor ?? [];
      assert.deepEqual(
        reservedFor.map((consumer) => consumer.name),
        ['borrower'],
      );
      const teamA = (await readObject(cluster, 'resource.k8s.io/v1', 'ResourceClaim', 'own-gpu', 'team-a'))!;
      assert.ok(
        !((teamA.status as { reservedFor?: { name: string }[] }).reservedFor ?? []).some((consumer) => consumer.name === 'borrower'),
      );
    });

    it('pods of one namespace share a claim: a second team-a pod is given the same GPU, and status.reservedFor holds both', async () => {
      await createObject(cluster.objects, { ...pod('own-gpu-2', 'own-gpu'), metadata: { name: 'own-gpu-2', namespace: 'team-a' } });
      const reserved = await until('the claim is reserved for both pods', 60, async () => {
        const current = await readObject(cluster, 'resource.k8s.io/v1', 'ResourceClaim', 'own-gpu', 'team-a');
        const consumers = (current?.status as { reservedFor?: { name: string }[] } | undefined)?.reservedFor ?? [];
        return consumers.length === 2 ? consumers.map((consumer) => consumer.name).sort() : undefined;
      });
      assert.deepEqual(reserved, ['own-gpu', 'own-gpu-2']);
    });

    it("the audit reports an allocated claim whose namespace is now another group's: foreign-device-toleration", async () => {
      const ns = (await readObject(cluster, 'v1', 'Namespace', 'team-a'))!;
      await cluster.objects.replace(asKubernetesObject({ ...ns, metadata: { ...ns.metadata, labels: { dedicated: 'b' } } }));
      const result = spawnSync(
        process.execPath,
        [
          '--enable-experimental-regexp-engine-on-excessive-backtracks',
          '--import',
          'tsx',
          'src/main.ts',
          'audit',
          '--kubeconfig',
          cluster.plane.kubeconfig,
          '--policies',
          policies,
          '--rule',
          'foreign-device-toleration',
          '-o',
          'json',
        ],
        { cwd: REPO_ROOT, encoding: 'utf8', timeout: 120_000, env: { ...process.env, KUBECONFIG: '' } },
      );
      assert.equal(result.status, 1, `${result.stdout}${result.stderr}`);
      const violations = (
        JSON.parse(result.stdout) as { violations: { kind?: string; namespace: string; name: string; rule: string; message: string }[] }
      ).violations;
      assert.deepEqual(
        violations.map(({ kind, namespace: ns2, name, rule }) => ({ kind, namespace: ns2, name, rule })),
        [{ kind: 'ResourceClaim', namespace: 'team-a', name: 'own-gpu', rule: 'foreign-device-toleration' }],
      );
      assert.match(
        violations[0]!.message,
        /^status\.allocation\.devices\.results\[0\] \(device gpu\.example\.com\/worker-a\/gpu-a-0\)\.tolerations\[0\] tolerates the device taint of group "a" .*namespace "team-a" belongs to group "b"/,
      );
    });

    it("the periodic audit of serve reads ResourceClaims with deploy/overlays/audit's RBAC and reports the same foreign-device-toleration", async () => {
      // Runs after the namespace's relabelling above; one run every 5 s.
      const auditLogs = (): string =>
        JSON.stringify((cluster.tolerator()?.logs ?? []).filter((entry) => /audit|lease|ResourceClaim/i.test(String(entry.msg))).slice(-8));
      const found = await until('a periodic audit that reports the claim', 60, async () => {
        const metrics = await getFromTolerator(cluster.tolerator()!.port, cluster.serving.ca.cert, '/metrics');
        return /^tolerator_audit_violations\{rule="foreign-device-toleration",namespace="team-a"\} 1$/m.test(metrics) ? metrics : undefined;
      }).catch((error: unknown) => {
        throw new Error(`${error instanceof Error ? error.message : String(error)}; the audit's last log lines: ${auditLogs()}`);
      });
      assert.match(found, /^tolerator_audit_runs_total\{result="completed"\} [1-9]/m);
      // The claims were listed by tolerator's own identity, not skipped (a 403 would say so).
      const completed = (cluster.tolerator()?.logs ?? []).filter((entry) => entry.msg === 'audit completed');
      const claims = completed.at(-1)?.resourceClaims;
      assert.ok(typeof claims === 'number' && claims >= 2, JSON.stringify(completed.at(-1)));
    });
  });
});
