/**
 * PodTolerationRestriction and PodNodeSelector through a real kube-apiserver, against the in-tree
 * plugins themselves: two control planes side by side, given the same AdmissionConfiguration file
 * and the same namespaces and pods.
 *
 * - tolerator's plane: the in-tree plugins off (their default), tolerator's webhooks as shipped,
 *   `tolerator serve --admission-config FILE --enable-plugins PodNodeSelector`;
 * - the in-tree plane: `--enable-admission-plugins PodTolerationRestriction,PodNodeSelector
 *   --admission-control-config-file FILE`, no webhook.
 *
 * Both run the in-tree DefaultTolerationSeconds (on by default), so both see the same pod when
 * their PodTolerationRestriction merges. Each case has a namespace of its own, annotated when it is
 * created: both plugins read namespaces from an informer, which may not yet hold a later change.
 *
 * A pod either plane stores must be stored alike (tolerations, nodeSelector); a refusal must be the
 * in-tree refusal as it reaches a user through a webhook — the same code, reason and details, and
 * the message behind `admission webhook "mutate.tolerator.dev" denied the request: ` — except
 * where tolerator differs on purpose (docs/kubernetes-rules.md, "Deliberate differences"): the
 * in-tree plugins answer a whitelist violation or a namespace annotation that does not parse with
 * a plain error, which kube-apiserver sends as 500 without a reason; a webhook answering 500 would
 * hand the pod to its failurePolicy, so tolerator refuses with 403 Forbidden and the same text.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type * as k8s from '@kubernetes/client-node';
import { parseAdmissionConfig } from '../../src/plugins/admission-config.js';
import { findKubectl, skipWithoutControlPlane } from '../cluster/binaries.js';
import { startControlPlane, type ControlPlane } from '../cluster/control-plane.js';
import {
  apiError,
  clientsFor,
  createObject,
  startToleratorOnCluster,
  type Manifest,
  type ToleratorOnCluster,
} from '../cluster/tolerator-on-cluster.js';

const skip = skipWithoutControlPlane();

const exists = (key: string, effect = 'NoSchedule'): Record<string, string> => ({ key, operator: 'Exists', effect });
const notReady = { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 };
const unreachable = { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 };
const memoryPressure = exists('node.kubernetes.io/memory-pressure');
const spot = exists('example.com/spot');
const gpu = exists('example.com/gpu');

/** The one file both planes are configured with (PodTolerationRestriction's only version is v1alpha1). */
const admissionConfiguration = `apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
  - name: PodTolerationRestriction
    configuration:
      apiVersion: podtolerationrestriction.admission.k8s.io/v1alpha1
      kind: Configuration
      default:
        - { key: example.com/spot, operator: Exists, effect: NoSchedule }
      whitelist:
        - { key: node.kubernetes.io/not-ready, operator: Exists, effect: NoExecute }
        - { key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute }
        - { key: node.kubernetes.io/memory-pressure, operator: Exists, effect: NoSchedule }
        - { key: example.com/spot, operator: Exists, effect: NoSchedule }
  - name: PodNodeSelector
    configuration:
      podNodeSelectorPluginConfig:
        clusterDefaultNodeSelector: kubernetes.io/os=linux
        edge: "env=prod, kubernetes.io/os=linux"
`;

const defaultTolerations = 'scheduler.alpha.kubernetes.io/defaultTolerations';
const tolerationsWhitelist = 'scheduler.alpha.kubernetes.io/tolerationsWhitelist';
const nodeSelector = 'scheduler.alpha.kubernetes.io/node-selector';

/** A Burstable pod (it requests cpu), so PodTolerationRestriction adds memory-pressure. */
function pod(namespace: string, name: string | undefined, spec: Record<string, unknown> = {}): Manifest {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { ...(name === undefined ? { generateName: 'web-' } : { name }), namespace },
    spec: { containers: [{ name: 'app', image: 'registry.example/app:1', resources: { requests: { cpu: '10m' } } }], ...spec },
  };
}

interface Stored {
  readonly tolerations: unknown;
  readonly nodeSelector: unknown;
}
interface Refused {
  readonly code: number;
  readonly reason: string | undefined;
  readonly message: string | undefined;
  readonly details: unknown;
}

async function outcome(objects: k8s.KubernetesObjectApi, body: Manifest): Promise<{ stored: Stored } | { refused: Refused }> {
  try {
    const stored = await createObject(objects, body);
    const spec = stored.spec as { tolerations?: unknown; nodeSelector?: unknown };
    return { stored: { tolerations: spec.tolerations, nodeSelector: spec.nodeSelector } };
  } catch (error) {
    const { code, status } = apiError(error);
    return { refused: { code, reason: status.reason, message: status.message, details: status.details } };
  }
}

const deniedByMutate = 'admission webhook "mutate.tolerator.dev" denied the request: ';

describe('PodTolerationRestriction and PodNodeSelector: tolerator against the in-tree plugins', { skip }, () => {
  let dir: string;
  let config: string;
  let tolerator: ToleratorOnCluster;
  let inTree: ControlPlane;
  let inTreeObjects: k8s.KubernetesObjectApi;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tolerator-e2e-plugins-'));
    config = join(dir, 'admission.yaml');
    writeFileSync(config, admissionConfiguration);
    [tolerator, inTree] = await Promise.all([
      startToleratorOnCluster({
        dir: join(dir, 'tolerator'),
        serveArgs: ['--admission-config', config, '--enable-plugins', 'PodNodeSelector'],
      }),
      startControlPlane({
        dir: join(dir, 'in-tree'),
        enableAdmissionPlugins: ['PodTolerationRestriction', 'PodNodeSelector'],
        admissionControlConfigFile: config,
      }),
    ]);
    inTreeObjects = clientsFor(inTree.kubeconfig).objects;
  });
  after(async () => {
    await Promise.all([(tolerator as ToleratorOnCluster | undefined)?.stop(), (inTree as ControlPlane | undefined)?.stop()]);
    rmSync(dir, { recursive: true, force: true });
  });

  const namespaces = new Set<string>();
  /** The namespace, created once on both planes with its annotations. */
  async function namespaceOnBoth(name: string, annotations: Record<string, string> = {}): Promise<void> {
    if (namespaces.has(name)) return;
    namespaces.add(name);
    const body: Manifest = { apiVersion: 'v1', kind: 'Namespace', metadata: { name, annotations } };
    await Promise.all([createObject(tolerator.objects, body), createObject(inTreeObjects, body)]);
  }

  async function onBoth(
    body: Manifest,
  ): Promise<{ tolerator: Awaited<ReturnType<typeof outcome>>; inTree: Awaited<ReturnType<typeof outcome>> }> {
    return { tolerator: await outcome(tolerator.objects, body), inTree: await outcome(inTreeObjects, body) };
  }

  const stores: {
    name: string;
    namespace: string;
    annotations?: Record<string, string>;
    spec?: Record<string, unknown>;
    want: Stored;
  }[] = [
    {
      name: "a namespace's default tolerations are merged after DefaultTolerationSeconds', within its whitelist",
      namespace: 'ns-defaults',
      annotations: {
        [defaultTolerations]: JSON.stringify([gpu]),
        [tolerationsWhitelist]: JSON.stringify([
          gpu,
          exists('node.kubernetes.io/not-ready', 'NoExecute'),
          exists('node.kubernetes.io/unreachable', 'NoExecute'),
          memoryPressure,
        ]),
      },
      want: { tolerations: [notReady, unreachable, gpu, memoryPressure], nodeSelector: { 'kubernetes.io/os': 'linux' } },
    },
    {
      name: "a namespace without annotations gets the configuration's default tolerations and default node selector",
      namespace: 'cluster-defaults',
      spec: { nodeSelector: { disk: 'ssd' } },
      want: { tolerations: [notReady, unreachable, spot, memoryPressure], nodeSelector: { disk: 'ssd', 'kubernetes.io/os': 'linux' } },
    },
    {
      name: 'a default toleration that covers the not-ready and unreachable ones replaces them in the merge; an empty whitelist allows it',
      namespace: 'covering-default',
      annotations: { [defaultTolerations]: JSON.stringify([{ operator: 'Exists', effect: 'NoExecute' }]), [tolerationsWhitelist]: '[]' },
      want: { tolerations: [{ operator: 'Exists', effect: 'NoExecute' }, memoryPressure], nodeSelector: { 'kubernetes.io/os': 'linux' } },
    },
    {
      name: "a namespace's node selector annotation replaces the cluster default and is merged into the pod's",
      namespace: 'ns-selector',
      annotations: { [nodeSelector]: 'env=prod, tier = web' },
      spec: { nodeSelector: { disk: 'ssd' } },
      want: { tolerations: [notReady, unreachable, spot, memoryPressure], nodeSelector: { disk: 'ssd', env: 'prod', tier: 'web' } },
    },
    {
      name: 'an empty node selector annotation means no selector, not the cluster default',
      namespace: 'open',
      annotations: { [nodeSelector]: '' },
      want: { tolerations: [notReady, unreachable, spot, memoryPressure], nodeSelector: undefined },
    },
    {
      name: "a pod within its namespace's node selector whitelist (the configuration's entry named edge) is stored",
      namespace: 'edge',
      spec: { nodeSelector: { env: 'prod' } },
      want: { tolerations: [notReady, unreachable, spot, memoryPressure], nodeSelector: { env: 'prod', 'kubernetes.io/os': 'linux' } },
    },
    {
      name: "a namespace default with a longer NoExecute bound wins the merge over DefaultTolerationSeconds' 300 s, and takes the later place",
      namespace: 'longer-bound',
      annotations: {
        [defaultTolerations]: JSON.stringify([{ ...notReady, tolerationSeconds: 600 }]),
        [tolerationsWhitelist]: '[]',
      },
      want: {
        tolerations: [unreachable, { ...notReady, tolerationSeconds: 600 }, memoryPressure],
        nodeSelector: { 'kubernetes.io/os': 'linux' },
      },
    },
    {
      name: "a namespace default with a shorter NoExecute bound is covered by DefaultTolerationSeconds' 300 s and dropped",
      namespace: 'shorter-bound',
      annotations: { [defaultTolerations]: JSON.stringify([{ ...notReady, tolerationSeconds: 60 }]), [tolerationsWhitelist]: '[]' },
      want: { tolerations: [notReady, unreachable, memoryPressure], nodeSelector: { 'kubernetes.io/os': 'linux' } },
    },
    {
      name: 'a node selector annotation with a repeated key keeps its last value; Unicode spaces around parts are trimmed as Go trims them',
      namespace: 'repeated-key',
      annotations: { [nodeSelector]: 'env=prod,env=dev,\u00a0tier = web\u0085' },
      want: { tolerations: [notReady, unreachable, spot, memoryPressure], nodeSelector: { env: 'dev', tier: 'web' } },
    },
  ];
  for (const row of stores) {
    it(`${row.name}: stored alike by both`, async () => {
      await namespaceOnBoth(row.namespace, row.annotations);
      const got = await onBoth(pod(row.namespace, 'stored', row.spec));
      assert.deepEqual(got.inTree, { stored: row.want }, 'the in-tree plugins');
      assert.deepEqual(got.tolerator, { stored: row.want }, 'tolerator');
    });
  }

  const refusals: {
    name: string;
    namespace: string;
    annotations?: Record<string, string>;
    /** The pod's name (default `refused`); undefined with generateName. */
    podName?: string;
    generateName?: true;
    spec?: Record<string, unknown>;
    /** The in-tree plane's answer. */
    want: Refused;
    /** tolerator's, where it differs on purpose; else the in-tree answer through the webhook. */
    toleratorWant?: Refused;
  }[] = [
    {
      name: 'a toleration outside the cluster whitelist',
      namespace: 'cluster-whitelist',
      spec: { tolerations: [exists('example.com/other')] },
      want: {
        code: 500,
        reason: undefined,
        message: 'pod tolerations (possibly merged with namespace default tolerations) conflict with its cluster whitelist',
        details: undefined,
      },
      toleratorWant: {
        code: 403,
        reason: 'Forbidden',
        message: `${deniedByMutate}pod tolerations (possibly merged with namespace default tolerations) conflict with its cluster whitelist`,
        details: undefined,
      },
    },
    {
      name: "the cluster's default toleration, once merged, outside the namespace's whitelist",
      namespace: 'ns-whitelist',
      annotations: {
        [tolerationsWhitelist]: JSON.stringify([
          exists('node.kubernetes.io/not-ready', 'NoExecute'),
          exists('node.kubernetes.io/unreachable', 'NoExecute'),
          memoryPressure,
        ]),
      },
      want: {
        code: 500,
        reason: undefined,
        message: 'pod tolerations (possibly merged with namespace default tolerations) conflict with its namespace whitelist',
        details: undefined,
      },
      toleratorWant: {
        code: 403,
        reason: 'Forbidden',
        message: `${deniedByMutate}pod tolerations (possibly merged with namespace default tolerations) conflict with its namespace whitelist`,
        details: undefined,
      },
    },
    {
      name: "a nodeSelector that conflicts with its namespace's",
      namespace: 'ns-selector',
      annotations: { [nodeSelector]: 'env=prod, tier = web' },
      podName: 'conflict',
      spec: { nodeSelector: { env: 'dev' } },
      want: {
        code: 403,
        reason: 'Forbidden',
        message: 'pods "conflict" is forbidden: pod node label selector conflicts with its namespace node label selector',
        details: { name: 'conflict', kind: 'pods' },
      },
    },
    {
      name: "a nodeSelector that conflicts with its namespace's, the pod's name still to be generated",
      namespace: 'ns-selector',
      annotations: { [nodeSelector]: 'env=prod, tier = web' },
      generateName: true,
      spec: { nodeSelector: { env: 'dev' } },
      want: {
        code: 403,
        reason: 'Forbidden',
        message: 'pods is forbidden: pod node label selector conflicts with its namespace node label selector',
        details: { kind: 'pods' },
      },
    },
    {
      name: "a nodeSelector label outside its namespace's whitelist",
      namespace: 'edge',
      podName: 'outside',
      spec: { nodeSelector: { gpu: 'true' } },
      want: {
        code: 403,
        reason: 'Forbidden',
        message: 'pods "outside" is forbidden: pod node label selector labels conflict with its namespace whitelist',
        details: { name: 'outside', kind: 'pods' },
      },
    },
    {
      name: 'a node selector annotation that does not parse',
      namespace: 'broken-selector',
      annotations: { [nodeSelector]: 'edge' },
      want: { code: 500, reason: undefined, message: 'invalid selector: [edge]', details: undefined },
      toleratorWant: {
        code: 403,
        reason: 'Forbidden',
        message: `${deniedByMutate}namespace "broken-selector" annotation "${nodeSelector}": invalid selector: [edge]`,
        details: undefined,
      },
    },
    {
      name: "DefaultTolerationSeconds' 300 s outside a namespace whitelist that bounds not-ready to 100 s",
      namespace: 'bounded-whitelist',
      annotations: {
        [tolerationsWhitelist]: JSON.stringify([
          { ...notReady, tolerationSeconds: 100 },
          exists('node.kubernetes.io/unreachable', 'NoExecute'),
          memoryPressure,
          spot,
        ]),
      },
      want: {
        code: 500,
        reason: undefined,
        message: 'pod tolerations (possibly merged with namespace default tolerations) conflict with its namespace whitelist',
        details: undefined,
      },
      toleratorWant: {
        code: 403,
        reason: 'Forbidden',
        message: `${deniedByMutate}pod tolerations (possibly merged with namespace default tolerations) conflict with its namespace whitelist`,
        details: undefined,
      },
    },
    {
      name: "a node selector annotation with '==' (not accepted: each part is split at every '=')",
      namespace: 'double-equals',
      annotations: { [nodeSelector]: 'env==prod' },
      want: { code: 500, reason: undefined, message: 'invalid selector: [env  prod]', details: undefined },
      toleratorWant: {
        code: 403,
        reason: 'Forbidden',
        message: `${deniedByMutate}namespace "double-equals" annotation "${nodeSelector}": invalid selector: [env  prod]`,
        details: undefined,
      },
    },
    {
      name: 'a default tolerations annotation that does not parse',
      namespace: 'broken-defaults',
      annotations: { [defaultTolerations]: '{not json' },
      want: {
        code: 500,
        reason: undefined,
        message: "invalid character 'n' looking for beginning of object key string",
        details: undefined,
      },
      toleratorWant: {
        code: 403,
        reason: 'Forbidden',
        message: `${deniedByMutate}namespace "broken-defaults" annotation "${defaultTolerations}": invalid character 'n' looking for beginning of object key string`,
        details: undefined,
      },
    },
    {
      // v1.Toleration has json tags, so Go names the field by its tag (a pod's own annotation
      // decodes into core.Toleration, which has none: Toleration.TolerationSeconds there).
      name: 'a default tolerations annotation with a string tolerationSeconds (Go names the field Toleration.tolerationSeconds)',
      namespace: 'mistyped-defaults',
      annotations: { [defaultTolerations]: '[{"key":"k","operator":"Exists","tolerationSeconds":"5"}]' },
      want: {
        code: 500,
        reason: undefined,
        message: 'json: cannot unmarshal string into Go struct field Toleration.tolerationSeconds of type int64',
        details: undefined,
      },
      toleratorWant: {
        code: 403,
        reason: 'Forbidden',
        message: `${deniedByMutate}namespace "mistyped-defaults" annotation "${defaultTolerations}": json: cannot unmarshal string into Go struct field Toleration.tolerationSeconds of type int64`,
        details: undefined,
      },
    },
  ];
  for (const row of refusals) {
    const how = row.toleratorWant === undefined ? 'the same refusal, through the webhook' : 'a 403 where in-tree is a 500, on purpose';
    it(`${row.name}: refused by both (${how})`, async () => {
      await namespaceOnBoth(row.namespace, row.annotations);
      const got = await onBoth(pod(row.namespace, row.generateName ? undefined : (row.podName ?? 'refused'), row.spec));
      assert.deepEqual(got.inTree, { refused: row.want }, 'the in-tree plugins');
      const throughWebhook = row.toleratorWant ?? { ...row.want, message: `${deniedByMutate}${row.want.message ?? ''}` };
      assert.deepEqual(got.tolerator, { refused: throughWebhook }, 'tolerator');
    });
  }

  it("a whitelist refusal as a user's kubectl prints it, from either plane", async (t) => {
    const kubectl = findKubectl();
    assert.ok(kubectl, 'a kubectl on the PATH or built with the control plane');
    t.diagnostic(`kubectl from ${kubectl.source}: ${kubectl.path}`);
    await namespaceOnBoth('edge');
    const manifest = JSON.stringify(pod('edge', 'kubectl-outside', { nodeSelector: { gpu: 'true' } }));
    const create = (kubeconfig: string): { status: number | null; stderr: string } => {
      const run = spawnSync(kubectl.path, ['--kubeconfig', kubeconfig, 'create', '-f', '-'], { input: manifest, encoding: 'utf8' });
      return { status: run.status, stderr: run.stderr };
    };
    const line =
      'error when creating "STDIN": pods "kubectl-outside" is forbidden: pod node label selector labels conflict with its namespace whitelist';
    assert.deepEqual(create(inTree.kubeconfig), { status: 1, stderr: `Error from server (Forbidden): ${line}\n` });
    assert.deepEqual(create(tolerator.plane.kubeconfig), {
      status: 1,
      stderr: `Error from server (Forbidden): ${line.replace('pods "kubectl-outside"', `${deniedByMutate}pods "kubectl-outside"`)}\n`,
    });
  });
});

describe('the PodTolerationRestriction configuration kube-apiserver accepts (v1alpha1, 1.35 to 1.37), and tolerator', { skip }, () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'tolerator-e2e-plugin-config-'));
  });
  after(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  /** kube-apiserver's failure to start with `text` as its admission configuration, or undefined when it starts. */
  async function apiserverRefuses(name: string, text: string): Promise<string | undefined> {
    const file = join(dir, `${name}.yaml`);
    writeFileSync(file, text);
    try {
      const plane = await startControlPlane({
        dir: join(dir, name),
        enableAdmissionPlugins: ['PodTolerationRestriction'],
        admissionControlConfigFile: file,
      });
      await plane.stop();
      return undefined;
    } catch (error) {
      return (error as Error).message;
    }
  }
  const toleratorRefuses = (text: string): string | undefined => {
    try {
      parseAdmissionConfig(text, '/etc/tolerator/admission.yaml', { allowComparisonOperators: false, readFile: () => '' });
      return undefined;
    } catch (error) {
      return (error as Error).message;
    }
  };

  it('a Configuration in podtolerationrestriction.admission.k8s.io/v1 stops kube-apiserver at start, and tolerator refuses it too', async () => {
    const text = admissionConfiguration.replace(
      'podtolerationrestriction.admission.k8s.io/v1alpha1',
      'podtolerationrestriction.admission.k8s.io/v1',
    );
    assert.match(
      (await apiserverRefuses('ptr-v1', text)) ?? 'it started',
      /kube-apiserver exited with 1;[\s\S]*couldn't init admission plugin \\"PodTolerationRestriction\\": no kind \\"Configuration\\" is registered for version \\"podtolerationrestriction\.admission\.k8s\.io\/v1\\"/,
    );
    assert.match(
      toleratorRefuses(text) ?? 'it loaded',
      /unknown apiVersion\/kind "podtolerationrestriction\.admission\.k8s\.io\/v1, Kind=Configuration"/,
    );
  });

  it("PodTolerationRestriction's bare Configuration as the whole file stops kube-apiserver; tolerator takes it (its own extension, documented)", async () => {
    const text =
      'apiVersion: podtolerationrestriction.admission.k8s.io/v1alpha1\nkind: Configuration\ndefault: [{ key: example.com/spot, operator: Exists }]\n';
    assert.match(
      (await apiserverRefuses('ptr-bare', text)) ?? 'it started',
      /kube-apiserver exited with 1;[\s\S]*no kind \\"Configuration\\" is registered for version \\"podtolerationrestriction\.admission\.k8s\.io\/v1alpha1\\"/,
    );
    assert.equal(toleratorRefuses(text), undefined);
  });
});
