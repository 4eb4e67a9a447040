// The production manifests (deploy/) rendered as the cluster would receive them, schema-checked with
// kubernetes-models, and cross-checked against each other and against the server's contract: a
// webhook pointing at the wrong port, a certificate for the wrong name or a mount the --tls-* flags
// do not name all render and apply cleanly, and break only in the cluster.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import { join, posix } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse, parseAllDocuments } from 'yaml';
import jsonpatch from 'fast-json-patch';
import type { Operation } from 'fast-json-patch';
import { evaluate } from '@marcbachmann/cel-js';
import { MutatingWebhookConfiguration, ValidatingWebhookConfiguration } from 'kubernetes-models/admissionregistration.k8s.io/v1';
import type { IMutatingWebhook, IValidatingWebhook } from 'kubernetes-models/admissionregistration.k8s.io/v1';
import { Deployment } from 'kubernetes-models/apps/v1';
import type { IDeployment } from 'kubernetes-models/apps/v1';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2';
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { ClusterRole, ClusterRoleBinding, Role, RoleBinding } from 'kubernetes-models/rbac.authorization.k8s.io/v1';
import { ConfigMap, Namespace, ResourceQuota, Service, ServiceAccount } from 'kubernetes-models/v1';
import type { IContainer, IPodSpec } from 'kubernetes-models/v1';
import type { IIoK8sApimachineryPkgApisMetaV1LabelSelector as LabelSelector } from '@kubernetes-models/apimachinery/apis/meta/v1/LabelSelector';
import { Certificate, Issuer } from '@kubernetes-models/cert-manager/cert-manager.io/v1';
import { findKubectl } from '../cluster/binaries.js';
import type { ICertificate } from '@kubernetes-models/cert-manager/cert-manager.io/v1';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const BASE_DIR = join(ROOT, 'deploy');
const OVERLAY_DIR = join(ROOT, 'deploy', 'overlays', 'comparison-operators');
const NAMESPACE = 'tolerator-system';
const FEATURE_GATE_FLAG = '--feature-gates=TaintTolerationComparisonOperators=true';

// The server's command line as decided for production (the issue "Production deployment"): the
// image's ENTRYPOINT followed by the container's args must spell exactly this.
const SERVER_COMMAND = [
  'node',
  '--enable-experimental-regexp-engine-on-excessive-backtracks',
  'dist/main.js',
  'serve',
  '--port',
  '8443',
  '--tls-cert-file',
  '/etc/tolerator/tls/tls.crt',
  '--tls-private-key-file',
  '/etc/tolerator/tls/tls.key',
  '--policies',
  '/etc/tolerator/policies',
  '--shutdown-delay',
  '5',
  '--shutdown-grace',
  '5',
];
// kube-apiserver's DefaultTolerationSeconds: what a pod gets when it says nothing itself.
const APISERVER_DEFAULT_TOLERATION_SECONDS = 300;

interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; annotations?: Record<string, string> };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function toKubeObject(value: unknown, where: string): KubeObject {
  assert.ok(isRecord(value), `${where}: a document is not a mapping`);
  const metadata = value.metadata;
  assert.ok(typeof value.apiVersion === 'string' && typeof value.kind === 'string', `${where}: document without apiVersion/kind`);
  assert.ok(isRecord(metadata) && typeof metadata.name === 'string', `${where}: ${value.kind} without metadata.name`);
  return value as unknown as KubeObject;
}

function parseDocuments(text: string, where: string): KubeObject[] {
  const objects: KubeObject[] = [];
  for (const document of parseAllDocuments(text)) {
    assert.deepEqual(document.errors, [], `${where}: YAML errors`);
    const value: unknown = document.toJS();
    if (value !== null && value !== undefined) objects.push(toKubeObject(value, where));
  }
  return objects;
}

// --- rendering -------------------------------------------------------------------------------

interface Rendered {
  source: 'kubectl kustomize' | 'raw files';
  docs: KubeObject[];
}

const kubectl = findKubectl();

/**
 * `kubectl kustomize DIR` with the kubectl on the PATH or the control plane's build; without
 * either, the fallback below. A kustomize error is a failure.
 */
function render(dir: string): Rendered {
  if (kubectl === undefined) return { source: 'raw files', docs: renderFromFiles(dir) };
  const out = execFileSync(kubectl.path, ['kustomize', dir], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  return { source: 'kubectl kustomize', docs: parseDocuments(out, dir) };
}

interface ImageEntry {
  name: string;
  newName?: string;
  newTag?: string;
}
interface PatchEntry {
  path: string;
  target: { kind: string; name: string };
}

// The subset of kustomize these manifests use, so the tests still run where kubectl is absent:
// resources (files and directories), images, and JSON 6902 patches. Anything else is refused
// rather than silently rendered wrong; when kubectl is present a test checks that both agree.
const FALLBACK_KEYS = new Set(['apiVersion', 'kind', 'resources', 'images', 'patches']);

function renderFromFiles(dir: string): KubeObject[] {
  const kustomization: unknown = parse(readFileSync(join(dir, 'kustomization.yaml'), 'utf8'));
  assert.ok(isRecord(kustomization), `${dir}/kustomization.yaml is not a mapping`);
  for (const key of Object.keys(kustomization)) {
    assert.ok(FALLBACK_KEYS.has(key), `${dir}/kustomization.yaml uses "${key}", which the raw-file fallback cannot render`);
  }
  const resources = (kustomization.resources ?? []) as string[];
  const docs = resources.flatMap((resource) => {
    const path = join(dir, resource);
    return statSync(path).isDirectory() ? renderFromFiles(path) : parseDocuments(readFileSync(path, 'utf8'), path);
  });
  for (const image of (kustomization.images ?? []) as ImageEntry[]) {
    for (const doc of docs) {
      const spec = (doc as { spec?: { template?: { spec?: IPodSpec } } }).spec?.template?.spec;
      for (const container of [...(spec?.initContainers ?? []), ...(spec?.containers ?? [])]) {
        if (container.image === image.name) container.image = `${image.newName ?? image.name}:${image.newTag ?? 'latest'}`;
      }
    }
  }
  for (const patch of (kustomization.patches ?? []) as PatchEntry[]) {
    const operations = parse(readFileSync(join(dir, patch.path), 'utf8')) as Operation[];
    const targets = docs.filter((d) => d.kind === patch.target.kind && d.metadata.name === patch.target.name);
    assert.equal(targets.length, 1, `patch ${patch.path} must match exactly one object`);
    // validateOperation: a failed `test` operation throws, as kustomize fails the build.
    jsonpatch.applyPatch(targets[0], operations, true);
  }
  return docs;
}

// --- schema ------------------------------------------------------------------------------------

type Model = new (data: never) => { validate(): void };
const MODELS = new Map<string, Model>([
  ['v1/Namespace', Namespace],
  ['v1/ServiceAccount', ServiceAccount],
  ['v1/Service', Service],
  ['v1/ConfigMap', ConfigMap],
  ['v1/ResourceQuota', ResourceQuota],
  ['rbac.authorization.k8s.io/v1/ClusterRole', ClusterRole],
  ['rbac.authorization.k8s.io/v1/ClusterRoleBinding', ClusterRoleBinding],
  ['rbac.authorization.k8s.io/v1/Role', Role],
  ['rbac.authorization.k8s.io/v1/RoleBinding', RoleBinding],
  ['apps/v1/Deployment', Deployment],
  ['policy/v1/PodDisruptionBudget', PodDisruptionBudget],
  ['networking.k8s.io/v1/NetworkPolicy', NetworkPolicy],
  ['autoscaling/v2/HorizontalPodAutoscaler', HorizontalPodAutoscaler],
  ['admissionregistration.k8s.io/v1/MutatingWebhookConfiguration', MutatingWebhookConfiguration],
  ['admissionregistration.k8s.io/v1/ValidatingWebhookConfiguration', ValidatingWebhookConfiguration],
  ['cert-manager.io/v1/Issuer', Issuer],
  ['cert-manager.io/v1/Certificate', Certificate],
]);

// --- lookups and small evaluators ---------------------------------------------------------------

function one<T>(docs: readonly KubeObject[], guard: (value: unknown) => value is T, name: string): KubeObject & T {
  const found = docs.filter((doc): doc is KubeObject & T => guard(doc) && doc.metadata.name === name);
  assert.equal(found.length, 1, `expected exactly one ${name} of that kind`);
  return found[0]!;
}

function podSpec(deployment: IDeployment): IPodSpec {
  const spec = deployment.spec?.template.spec;
  assert.ok(spec, 'Deployment without a pod template spec');
  return spec;
}

function serverContainer(deployment: IDeployment): IContainer {
  const container = podSpec(deployment).containers.find((c) => c.name === 'tolerator');
  assert.ok(container, 'no container named tolerator');
  return container;
}

/** The value of `--name value` or `--name=value`. */
function flagValue(args: readonly string[], name: string): string | undefined {
  for (const [i, arg] of args.entries()) {
    if (arg === name) return args[i + 1];
    if (arg.startsWith(`${name}=`)) return arg.slice(name.length + 1);
  }
  return undefined;
}

/** Kubernetes label-selector semantics (matchLabels AND every matchExpression). */
function selectorMatches(selector: LabelSelector, labels: Readonly<Record<string, string>>): boolean {
  const byLabel = Object.entries(selector.matchLabels ?? {}).every(([k, v]) => labels[k] === v);
  return (
    byLabel &&
    (selector.matchExpressions ?? []).every(({ key, operator, values = [] }) => {
      const value = labels[key];
      switch (operator) {
        case 'In':
          return value !== undefined && values.includes(value);
        case 'NotIn':
          return value === undefined || !values.includes(value);
        case 'Exists':
          return value !== undefined;
        case 'DoesNotExist':
          return value === undefined;
        default:
          throw new Error(`unknown selector operator ${operator}`);
      }
    })
  );
}

/** Seconds of a Go duration as cert-manager writes them ("2160h", "1h30m"). */
function goDurationSeconds(text: string | undefined): number {
  const match = /^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$/.exec(text ?? '');
  assert.ok(match && text, `not a duration in h/m/s: ${String(text)}`);
  return Number(match[1] ?? 0) * 3600 + Number(match[2] ?? 0) * 60 + Number(match[3] ?? 0);
}

/** The ENTRYPOINT of the Dockerfile's last (runtime) stage, exec form. */
function dockerEntrypoint(): string[] {
  const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
  const runtime = dockerfile.slice(dockerfile.search(/^FROM\s(?![\s\S]*^FROM\s)/m));
  const line = /^ENTRYPOINT\s+(\[.*\])\s*$/m.exec(runtime);
  assert.ok(line?.[1], 'the runtime stage has no exec-form ENTRYPOINT');
  return JSON.parse(line[1]) as string[];
}

// --- the base ------------------------------------------------------------------------------------

const base = render(BASE_DIR);
const docs = base.docs;
const deployment = one(docs, Deployment.is, 'tolerator');
const container = serverContainer(deployment);
const args = container.args ?? [];
const podLabels = deployment.spec?.template.metadata?.labels ?? {};
const service = one(docs, Service.is, 'tolerator');
const serving = one(docs, Certificate.is, 'tolerator-serving');
const mutating = one(docs, MutatingWebhookConfiguration.is, 'tolerator');
const validating = one(docs, ValidatingWebhookConfiguration.is, 'tolerator');
const webhooks: readonly (IMutatingWebhook | IValidatingWebhook)[] = [...(mutating.webhooks ?? []), ...(validating.webhooks ?? [])];

describe('deploy/ renders to schema-valid objects', () => {
  it('renders the base with kustomize (or from the raw files when kubectl is absent)', (t) => {
    t.diagnostic(`deploy/ rendered from ${base.source}`);
    if (base.source === 'raw files') {
      t.diagnostic('kubectl not found: kustomization.yaml applied by the test (resources, images, patches only)');
    } else {
      t.diagnostic(`kubectl from the ${kubectl!.source}: ${kubectl!.path}`);
    }
    assert.ok(docs.length > 0);
  });

  it('contains exactly the objects of the production deployment', () => {
    const names = docs.map((d) => `${d.kind}/${d.metadata.name}`).sort();
    assert.deepEqual(names, [
      'Certificate/tolerator-ca',
      'Certificate/tolerator-serving',
      'ClusterRole/tolerator',
      'ClusterRoleBinding/tolerator',
      'ConfigMap/tolerator-policies',
      'Deployment/tolerator',
      'HorizontalPodAutoscaler/tolerator',
      'Issuer/tolerator-ca',
      'Issuer/tolerator-selfsigned',
      'MutatingWebhookConfiguration/tolerator',
      'Namespace/tolerator-system',
      'NetworkPolicy/tolerator',
      'PodDisruptionBudget/tolerator',
      'ResourceQuota/tolerator-critical-pods',
      'Service/tolerator',
      'ServiceAccount/tolerator',
      'ValidatingWebhookConfiguration/tolerator',
    ]);
  });

  it('passes the kubernetes-models / cert-manager schema for every document', () => {
    for (const doc of docs) {
      const Model = MODELS.get(`${doc.apiVersion}/${doc.kind}`);
      assert.ok(Model, `no schema for ${doc.apiVersion} ${doc.kind}`);
      assert.doesNotThrow(() => {
        new Model(doc as never).validate();
      }, `${doc.kind}/${doc.metadata.name}`);
    }
  });

  it('puts every namespaced object in tolerator-system', () => {
    const clusterScoped = new Set([
      'Namespace',
      'ClusterRole',
      'ClusterRoleBinding',
      'MutatingWebhookConfiguration',
      'ValidatingWebhookConfiguration',
    ]);
    for (const doc of docs) {
      assert.equal(doc.metadata.namespace, clusterScoped.has(doc.kind) ? undefined : NAMESPACE, `${doc.kind}/${doc.metadata.name}`);
    }
  });

  it('renders the same objects from the raw files as kubectl does', { skip: base.source === 'raw files' && 'kubectl not found' }, () => {
    const key = (d: KubeObject): string => `${d.kind}/${d.metadata.namespace ?? ''}/${d.metadata.name}`;
    const byKey = (list: KubeObject[]): Map<string, KubeObject> => new Map(list.map((d) => [key(d), d]));
    assert.deepEqual(byKey(renderFromFiles(BASE_DIR)), byKey(docs));
    assert.deepEqual(byKey(renderFromFiles(OVERLAY_DIR)), byKey(render(OVERLAY_DIR).docs));
  });
});

describe('Deployment tolerator', () => {
  it('runs 2 replicas of the released image', () => {
    assert.equal(deployment.spec?.replicas, 2);
    assert.equal(container.image, 'ghcr.io/tolerator/tolerator:0.1.0');
  });

  it('runs the server contract: the image ENTRYPOINT followed by the container args', () => {
    // A `command` would replace the ENTRYPOINT and with it the regexp-engine flag.
    assert.equal(container.command, undefined);
    assert.deepEqual([...dockerEntrypoint(), ...args], SERVER_COMMAND);
  });

  it('listens where the Service sends traffic: --port = containerPort = Service targetPort', () => {
    const port = container.ports?.find((p) => p.name === 'https');
    assert.equal(port?.containerPort, Number(flagValue(args, '--port')));
    const servicePort = service.spec?.ports?.find((p) => p.name === 'https');
    assert.equal(servicePort?.port, 443);
    const target = servicePort.targetPort;
    assert.equal(typeof target === 'string' ? container.ports?.find((p) => p.name === target)?.containerPort : target, port.containerPort);
    assert.ok(service.spec?.selector && selectorMatches({ matchLabels: service.spec.selector }, podLabels), 'Service selects the pods');
  });

  it('probes /readyz (readiness) and /healthz (liveness) over HTTPS on the server port', () => {
    const portOf = (p: number | string | undefined): number | undefined =>
      typeof p === 'string' ? container.ports?.find((c) => c.name === p)?.containerPort : p;
    for (const [probe, path] of [
      [container.readinessProbe, '/readyz'],
      [container.livenessProbe, '/healthz'],
    ] as const) {
      assert.equal(probe?.httpGet?.path, path);
      assert.equal(probe.httpGet.scheme, 'HTTPS');
      assert.equal(portOf(probe.httpGet.port), Number(flagValue(args, '--port')));
    }
  });

  it('mounts the serving certificate Secret as a directory where --tls-* point', () => {
    const certificateSecret = serving.spec.secretName;
    const volume = podSpec(deployment).volumes?.find((v) => v.secret?.secretName === certificateSecret);
    assert.ok(volume, `no volume of Secret ${certificateSecret}`);
    const mount = container.volumeMounts?.find((m) => m.name === volume.name);
    assert.ok(mount, 'the Secret volume is not mounted');
    assert.equal(mount.subPath, undefined, 'subPath mounts never see Secret renewals');
    assert.equal(mount.readOnly, true);
    assert.equal(posix.dirname(flagValue(args, '--tls-cert-file') ?? ''), mount.mountPath);
    assert.equal(posix.dirname(flagValue(args, '--tls-private-key-file') ?? ''), mount.mountPath);
    // cert-manager writes tls.crt and tls.key into the Secret.
    assert.equal(posix.basename(flagValue(args, '--tls-cert-file') ?? ''), 'tls.crt');
    assert.equal(posix.basename(flagValue(args, '--tls-private-key-file') ?? ''), 'tls.key');
  });

  it('mounts the fixed-name policies ConfigMap as the --policies directory', () => {
    one(docs, ConfigMap.is, 'tolerator-policies');
    const volume = podSpec(deployment).volumes?.find((v) => v.configMap?.name === 'tolerator-policies');
    assert.ok(volume);
    const mount = container.volumeMounts?.find((m) => m.name === volume.name);
    assert.ok(mount, 'the policies volume is not mounted');
    assert.equal(mount.mountPath, flagValue(args, '--policies'));
    assert.equal(mount.subPath, undefined);
  });

  it('uses no subPath mount anywhere', () => {
    for (const c of podSpec(deployment).containers) {
      for (const m of c.volumeMounts ?? []) assert.equal(m.subPath, undefined, `${c.name}: ${m.name}`);
    }
  });

  it('runs under the restricted pod security profile', () => {
    const pod = podSpec(deployment).securityContext;
    assert.equal(pod?.runAsNonRoot, true);
    assert.equal(pod.runAsUser, 65532);
    assert.equal(pod.runAsGroup, 65532);
    assert.equal(pod.seccompProfile?.type, 'RuntimeDefault');
    for (const c of podSpec(deployment).containers) {
      const s = c.securityContext;
      assert.equal(s?.allowPrivilegeEscalation, false, c.name);
      assert.equal(s.readOnlyRootFilesystem, true, c.name);
      assert.deepEqual(s.capabilities?.drop, ['ALL'], c.name);
      assert.deepEqual(s.capabilities.add, undefined, c.name);
      assert.notEqual(s.privileged, true, c.name);
      assert.notEqual(s.runAsUser, 0, c.name);
    }
    const namespace = one(docs, Namespace.is, NAMESPACE);
    assert.equal(namespace.metadata.labels?.['pod-security.kubernetes.io/enforce'], 'restricted');
  });

  it('gives every container CPU and memory requests and limits', () => {
    for (const c of podSpec(deployment).containers) {
      for (const kind of ['requests', 'limits'] as const) {
        for (const resource of ['cpu', 'memory']) {
          assert.ok(c.resources?.[kind]?.[resource] !== undefined, `${c.name}: ${kind}.${resource}`);
        }
      }
    }
  });

  it('is system-cluster-critical and tolerates add-on nodes and, for a bounded time, node failure', () => {
    const spec = podSpec(deployment);
    assert.equal(spec.priorityClassName, 'system-cluster-critical');
    const tolerations = spec.tolerations ?? [];
    assert.ok(tolerations.some((t) => t.key === 'CriticalAddonsOnly' && t.operator === 'Exists'));
    for (const key of ['node.kubernetes.io/not-ready', 'node.kubernetes.io/unreachable']) {
      const t = tolerations.find((x) => x.key === key);
      assert.equal(t?.effect, 'NoExecute', key);
      assert.equal(t.operator, 'Exists', key);
      assert.ok(t.tolerationSeconds !== undefined && t.tolerationSeconds > 0, `${key}: bounded, not forever`);
      assert.ok(t.tolerationSeconds < APISERVER_DEFAULT_TOLERATION_SECONDS, `${key}: replaced sooner than the default`);
    }
  });

  it('spreads replicas across nodes (topology spread and anti-affinity on kubernetes.io/hostname)', () => {
    const spec = podSpec(deployment);
    const spread = spec.topologySpreadConstraints?.find((c) => c.topologyKey === 'kubernetes.io/hostname');
    assert.equal(spread?.maxSkew, 1);
    assert.equal(spread.whenUnsatisfiable, 'DoNotSchedule');
    assert.ok(spread.labelSelector && selectorMatches(spread.labelSelector, podLabels));
    const anti = spec.affinity?.podAntiAffinity?.preferredDuringSchedulingIgnoredDuringExecution?.[0]?.podAffinityTerm;
    assert.equal(anti?.topologyKey, 'kubernetes.io/hostname');
    assert.ok(anti.labelSelector && selectorMatches(anti.labelSelector, podLabels));
  });

  it('gives shutdown enough time: drain + the longest webhook timeout < terminationGracePeriodSeconds', () => {
    const longestReview = Math.max(...webhooks.map((w) => w.timeoutSeconds ?? 10));
    const drain = Number(flagValue(args, '--shutdown-delay'));
    const inFlight = Number(flagValue(args, '--shutdown-grace'));
    const grace = podSpec(deployment).terminationGracePeriodSeconds;
    // The server's own bound on in-flight reviews covers the longest one the API server waits for,
    // and the kubelet's SIGKILL comes only after both phases.
    assert.ok(inFlight >= longestReview, `--shutdown-grace ${inFlight} < webhook timeout ${longestReview}`);
    assert.ok(grace !== undefined && grace > drain + inFlight, `grace ${String(grace)} <= ${drain} + ${inFlight}`);
  });

  it('never has fewer ready replicas than requested during a rollout', () => {
    assert.equal(deployment.spec?.strategy?.rollingUpdate?.maxUnavailable, 0);
  });
});

describe('RBAC', () => {
  it("binds the Deployment's ServiceAccount to the ClusterRole", () => {
    const account = podSpec(deployment).serviceAccountName;
    one(docs, ServiceAccount.is, account ?? '');
    const binding = one(docs, ClusterRoleBinding.is, 'tolerator');
    assert.deepEqual(binding.roleRef, { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'tolerator' });
    assert.deepEqual(binding.subjects, [{ kind: 'ServiceAccount', name: account, namespace: NAMESPACE }]);
  });

  it('grants exactly get/list/watch on namespaces, nodes and runtimeclasses, get on /metrics and /version, and no Role anywhere', () => {
    const role = one(docs, ClusterRole.is, 'tolerator');
    const grants = (role.rules ?? []).flatMap((rule) => {
      assert.equal(rule.resourceNames, undefined);
      const resources = (rule.apiGroups ?? []).flatMap((g) =>
        (rule.resources ?? []).flatMap((r) => rule.verbs.map((v) => `${g}/${r}:${v}`)),
      );
      const urls = (rule.nonResourceURLs ?? []).flatMap((url) => rule.verbs.map((v) => `${url}:${v}`));
      return [...resources, ...urls];
    });
    assert.deepEqual(grants.sort(), [
      '/metrics:get',
      '/namespaces:get',
      '/namespaces:list',
      '/namespaces:watch',
      '/nodes:get',
      '/nodes:list',
      '/nodes:watch',
      '/version:get',
      'node.k8s.io/runtimeclasses:get',
      'node.k8s.io/runtimeclasses:list',
      'node.k8s.io/runtimeclasses:watch',
    ]);
    assert.equal(docs.filter((d) => d.kind === 'Role' || d.kind === 'RoleBinding').length, 0);
  });
});

describe('availability objects', () => {
  it('PodDisruptionBudget keeps one replica of these pods', () => {
    const pdb = one(docs, PodDisruptionBudget.is, 'tolerator');
    assert.equal(pdb.spec?.minAvailable, 1);
    assert.ok(pdb.spec.selector && selectorMatches(pdb.spec.selector, podLabels));
  });

  it('HorizontalPodAutoscaler scales the Deployment on CPU from the replica count up', () => {
    const hpa = one(docs, HorizontalPodAutoscaler.is, 'tolerator');
    assert.deepEqual(hpa.spec?.scaleTargetRef, { apiVersion: 'apps/v1', kind: 'Deployment', name: 'tolerator' });
    assert.equal(hpa.spec.minReplicas, 2);
    assert.equal(hpa.spec.minReplicas, deployment.spec?.replicas);
    assert.ok(hpa.spec.maxReplicas >= hpa.spec.minReplicas);
    const cpu = hpa.spec.metrics?.find((m) => m.type === 'Resource' && m.resource?.name === 'cpu');
    assert.equal(cpu?.resource?.target.type, 'Utilization');
  });

  it('ResourceQuota admits the critical pods of a rollout at full scale', () => {
    const quota = one(docs, ResourceQuota.is, 'tolerator-critical-pods');
    const hpa = one(docs, HorizontalPodAutoscaler.is, 'tolerator');
    const surge = deployment.spec?.strategy?.rollingUpdate?.maxSurge;
    assert.equal(typeof surge, 'number');
    assert.ok(Number(quota.spec?.hard?.pods) >= (hpa.spec?.maxReplicas ?? Infinity) + Number(surge));
    const scope = quota.spec?.scopeSelector?.matchExpressions?.[0];
    assert.equal(scope?.scopeName, 'PriorityClass');
    assert.ok(scope.values?.includes(podSpec(deployment).priorityClassName ?? ''));
  });

  it('NetworkPolicy admits ingress to these pods only on the server port', () => {
    const policy = one(docs, NetworkPolicy.is, 'tolerator');
    assert.ok(policy.spec?.podSelector && selectorMatches(policy.spec.podSelector, podLabels));
    assert.deepEqual(policy.spec.policyTypes, ['Ingress']);
    const ports = (policy.spec.ingress ?? []).flatMap((rule) => rule.ports ?? [{ port: 'every port' }]);
    assert.deepEqual(ports, [{ protocol: 'TCP', port: Number(flagValue(args, '--port')) }]);
  });
});

describe('cert-manager chain', () => {
  it('serving Certificate names the Service as the API server dials it', () => {
    const name = `${service.metadata.name}.${service.metadata.namespace ?? ''}.svc`;
    assert.deepEqual(serving.spec.dnsNames, [name, `${name}.cluster.local`]);
  });

  it('serving Certificate is issued by a CA Issuer backed by a self-signed CA Certificate', () => {
    assert.equal(serving.spec.issuerRef.kind, 'Issuer');
    const caIssuer = one(docs, Issuer.is, serving.spec.issuerRef.name);
    const caSecret = caIssuer.spec.ca?.secretName;
    const ca = docs.filter((d): d is KubeObject & ICertificate => Certificate.is(d)).find((c) => c.spec.secretName === caSecret);
    assert.equal(ca?.spec.isCA, true);
    const root = one(docs, Issuer.is, ca.spec.issuerRef.name);
    assert.deepEqual(root.spec.selfSigned, {});
    // The CA key must survive CA renewal, or every leaf it signed stops verifying at once.
    assert.equal(ca.spec.privateKey?.rotationPolicy, 'Never');
  });

  it('renews before expiry, and the CA outlives the serving certificate by far', () => {
    const ca = one(docs, Certificate.is, 'tolerator-ca');
    for (const c of [serving, ca]) {
      const duration = goDurationSeconds(c.spec.duration);
      const renewBefore = goDurationSeconds(c.spec.renewBefore);
      assert.ok(renewBefore > 0 && renewBefore < duration, c.metadata.name);
    }
    // "By far": at least ten leaf lifetimes per CA lifetime.
    assert.ok(goDurationSeconds(ca.spec.duration) >= 10 * goDurationSeconds(serving.spec.duration));
  });
});

/** The webhook on pods, workloads and claims: not the NodePool nor the DeviceTaintRule webhook, which have their own tests. */
function podWebhooks(hooks: readonly IValidatingWebhook[]): IValidatingWebhook[] {
  return hooks.filter((hook) => hook.name === 'validate.tolerator.dev');
}
const nodePoolWebhookName = 'validate-nodepools.tolerator.dev';

describe('webhook configurations', () => {
  const cases = [
    { kind: 'MutatingWebhookConfiguration', config: mutating, hooks: mutating.webhooks ?? [], path: '/mutate', failurePolicy: 'Ignore' },
    {
      kind: 'ValidatingWebhookConfiguration',
      config: validating,
      // The pod webhook; the NodePool one has its own tests below.
      hooks: podWebhooks(validating.webhooks ?? []),
      path: '/validate',
      failurePolicy: 'Fail',
    },
  ] as const;

  for (const { kind, config, hooks, path, failurePolicy } of cases) {
    describe(kind, () => {
      it('has the CA injected from the serving Certificate', () => {
        assert.equal(
          config.metadata.annotations?.['cert-manager.io/inject-ca-from'],
          `${serving.metadata.namespace ?? ''}/${serving.metadata.name}`,
        );
        assert.ok(hooks.length > 0);
      });

      it(`calls the Service on ${path}`, () => {
        for (const hook of hooks) {
          assert.deepEqual(hook.clientConfig.service, {
            name: service.metadata.name,
            namespace: service.metadata.namespace,
            path,
            port: service.spec?.ports?.[0]?.port,
          });
          assert.equal(hook.clientConfig.url, undefined);
        }
      });

      it(`has failurePolicy ${failurePolicy}`, () => {
        for (const hook of hooks) assert.equal(hook.failurePolicy, failurePolicy);
      });

      it('speaks AdmissionReview v1 without side effects, within a short timeout, matching equivalent versions', () => {
        for (const hook of hooks) {
          assert.deepEqual(hook.admissionReviewVersions, ['v1']);
          assert.equal(hook.sideEffects, 'None');
          assert.equal(hook.matchPolicy, 'Equivalent');
          // At most the API server's default of 10 s (its maximum is 30 s).
          assert.ok(hook.timeoutSeconds !== undefined && hook.timeoutSeconds >= 1 && hook.timeoutSeconds <= 10);
        }
      });

      it('skips kube-system, kube-node-lease, its own namespace and opted-out namespaces', () => {
        const ns = (name: string, extra: Record<string, string> = {}): Record<string, string> => ({
          'kubernetes.io/metadata.name': name,
          ...extra,
        });
        for (const hook of hooks) {
          const selector = hook.namespaceSelector;
          assert.ok(selector);
          for (const name of ['kube-system', 'kube-node-lease', deployment.metadata.namespace ?? '']) {
            assert.equal(selectorMatches(selector, ns(name)), false, name);
          }
          assert.equal(selectorMatches(selector, ns('team-a', { 'tolerator.dev/ignore': 'true' })), false, 'opted out');
          assert.equal(selectorMatches(selector, ns('team-a')), true, 'a namespace without the label is reviewed');
          assert.equal(selectorMatches(selector, ns('team-a', { 'tolerator.dev/ignore': 'false' })), true, 'ignore=false is reviewed');
          assert.equal(selectorMatches(selector, ns('default')), true);
        }
      });

      it("skips a kubelet's mirror pods in the API server and nothing else, not a tenant's pod carrying the annotation (matchConditions evaluated as CEL)", () => {
        const mirror = { metadata: { name: 'etcd-node-1', annotations: { 'kubernetes.io/config.mirror': 'abc' } } };
        const kubelet = { username: 'system:node:node-1', groups: ['system:nodes', 'system:authenticated'] };
        const tenant = { username: 'alice', groups: ['system:authenticated'] };
        for (const hook of hooks) {
          const conditions = hook.matchConditions ?? [];
          assert.ok(conditions.length > 0);
          const matches = (resource: string, object: unknown, userInfo: object = kubelet): boolean =>
            conditions.every(
              ({ expression }) =>
                evaluate(expression, {
                  request: { operation: 'CREATE', resource: { group: '', version: 'v1', resource }, userInfo },
                  object,
                  oldObject: null,
                }) === true,
            );
          assert.equal(matches('pods', mirror), false, 'mirror pod');
          assert.equal(matches('pods', mirror, tenant), true, 'a tenant pod carrying the mirror annotation');
          assert.equal(matches('pods', mirror, { ...tenant, username: 'system:nodes' }), true, 'a username that only looks like a node');
          assert.equal(matches('pods', { metadata: { name: 'web' } }), true, 'pod without annotations');
          assert.equal(matches('pods', { metadata: { name: 'web', annotations: { a: 'b' } } }), true, 'annotated pod');
          for (const rule of hook.rules ?? []) {
            for (const resource of (rule.resources ?? []).filter((r) => r !== 'pods')) {
              assert.equal(matches(resource, mirror), true, `${resource} is never a mirror pod`);
            }
          }
        }
      });

      it('a user named system:node:<name> outside the group system:nodes is no kubelet: its mirror-annotated pods are sent to the webhook', () => {
        // NodeRestriction's NodeIdentity, which the Node authorizer shares: the name and the group.
        const mirror = { metadata: { name: 'etcd-node-1', annotations: { 'kubernetes.io/config.mirror': 'abc' } } };
        for (const hook of hooks) {
          const called = (userInfo: object): boolean =>
            (hook.matchConditions ?? []).every(
              ({ expression }) =>
                evaluate(expression, {
                  request: { operation: 'CREATE', resource: { group: '', version: 'v1', resource: 'pods' }, userInfo },
                  object: mirror,
                  oldObject: null,
                }) === true,
            );
          assert.equal(called({ username: 'system:node:node-1', groups: ['system:authenticated'] }), true, 'outside system:nodes');
          assert.equal(called({ username: 'system:node:node-1' }), true, 'no groups at all: sent, and no evaluation error');
          assert.equal(called({ username: 'system:node:node-1', groups: ['system:nodes', 'system:authenticated'] }), false, 'a kubelet');
        }
      });
    });
  }

  const ruleSet = (hooks: readonly (IMutatingWebhook | IValidatingWebhook)[]): string[] =>
    hooks
      .flatMap((hook) =>
        (hook.rules ?? []).flatMap((rule) =>
          (rule.apiGroups ?? []).flatMap((g) =>
            (rule.apiVersions ?? []).flatMap((v) =>
              (rule.resources ?? []).flatMap((r) => (rule.operations ?? []).map((op) => `${g}/${v}/${r} ${op}`)),
            ),
          ),
        ),
      )
      .sort();
  const createUpdate = (resources: string[]): string[] => resources.flatMap((r) => [`${r} CREATE`, `${r} UPDATE`]).sort();

  it('mutates pods and DaemonSets on CREATE/UPDATE, ResourceClaims and ResourceClaimTemplates on CREATE, and is reinvoked if needed', () => {
    assert.deepEqual(
      ruleSet(mutating.webhooks ?? []),
      [
        ...createUpdate(['/v1/pods', 'apps/v1/daemonsets']),
        'resource.k8s.io/v1/resourceclaims CREATE',
        'resource.k8s.io/v1/resourceclaimtemplates CREATE',
      ].sort(),
    );
    for (const hook of mutating.webhooks ?? []) assert.equal(hook.reinvocationPolicy, 'IfNeeded');
  });

  it('the NodePool webhook: karpenter.sh/v1 nodepools and nodeclaims on CREATE/UPDATE, cluster-scoped, failurePolicy Ignore, the same service and path', () => {
    const hook = (validating.webhooks ?? []).find((candidate) => candidate.name === nodePoolWebhookName);
    assert.ok(hook);
    assert.deepEqual(ruleSet([hook]), createUpdate(['karpenter.sh/v1/nodeclaims', 'karpenter.sh/v1/nodepools']));
    assert.equal(hook.rules?.[0]?.scope, 'Cluster');
    // NodePools are the platform team's writes: a tolerator outage must not block the NodePool edit that may end it.
    assert.equal(hook.failurePolicy, 'Ignore');
    assert.deepEqual(hook.clientConfig.service, {
      name: service.metadata.name,
      namespace: service.metadata.namespace,
      path: '/validate',
      port: service.spec?.ports?.[0]?.port,
    });
    assert.equal(hook.sideEffects, 'None');
    assert.equal(hook.matchPolicy, 'Equivalent');
    assert.ok(hook.timeoutSeconds !== undefined && hook.timeoutSeconds <= 10);
  });

  const tenantHooks = (validating.webhooks ?? []).filter((hook) => hook.name === 'validate.tolerator.dev');
  const deviceTaintRuleHooks = (validating.webhooks ?? []).filter((hook) => hook.name === 'devicetaintrules.validate.tolerator.dev');

  it('validates pods, every workload pod template, ResourceClaims on CREATE and ResourceClaimTemplates on CREATE/UPDATE', () => {
    assert.deepEqual(
      ruleSet(tenantHooks),
      [
        ...createUpdate([
          '/v1/pods',
          '/v1/podtemplates',
          '/v1/replicationcontrollers',
          'apps/v1/deployments',
          'apps/v1/replicasets',
          'apps/v1/statefulsets',
          'apps/v1/daemonsets',
          'batch/v1/jobs',
          'batch/v1/cronjobs',
          'resource.k8s.io/v1/resourceclaimtemplates',
        ]),
        'resource.k8s.io/v1/resourceclaims CREATE',
      ].sort(),
    );
    assert.equal(validating.webhooks?.length, 3, 'the tenant webhook, the NodePool webhook and the DeviceTaintRule webhook, nothing else');
  });

  it('DeviceTaintRuleSafety: DeviceTaintRules in every served version, on CREATE/UPDATE, failing open, matching equivalent versions', () => {
    assert.equal(deviceTaintRuleHooks.length, 1);
    const hook = deviceTaintRuleHooks[0]!;
    assert.deepEqual(
      ruleSet(deviceTaintRuleHooks),
      createUpdate([
        'resource.k8s.io/v1/devicetaintrules',
        'resource.k8s.io/v1beta2/devicetaintrules',
        'resource.k8s.io/v1alpha3/devicetaintrules',
      ]),
    );
    assert.equal(hook.failurePolicy, 'Ignore');
    assert.equal(hook.matchPolicy, 'Equivalent');
    assert.equal(hook.sideEffects, 'None');
    assert.equal(hook.clientConfig.service?.path, '/validate');
    assert.ok(hook.timeoutSeconds !== undefined && hook.timeoutSeconds <= 10);
    assert.equal(hook.rules?.[0]?.scope, 'Cluster');
  });
});

describe('overlays/comparison-operators', () => {
  const overlay = render(OVERLAY_DIR);

  it('adds the feature-gate flag to the server args once, and changes nothing else', (t) => {
    t.diagnostic(`overlay rendered from ${overlay.source}`);
    const gated = one(overlay.docs, Deployment.is, 'tolerator');
    const gatedArgs = serverContainer(gated).args ?? [];
    assert.equal(gatedArgs.filter((a) => a.startsWith('--feature-gates')).length, 1);
    assert.deepEqual(gatedArgs, [...args, FEATURE_GATE_FLAG]);
    assert.equal(args.includes(FEATURE_GATE_FLAG), false, 'the base leaves the gate off');
    const others = (list: KubeObject[]): KubeObject[] => list.filter((d) => d.kind !== 'Deployment');
    assert.deepEqual(others(overlay.docs), others(docs));
  });
});

describe('overlays/client-ca', () => {
  const dir = join(ROOT, 'deploy', 'overlays', 'client-ca');
  const overlay = render(dir);
  const withCa = one(overlay.docs, Deployment.is, 'tolerator');
  const caContainer = serverContainer(withCa);
  const caArgs = caContainer.args ?? [];

  it('adds --client-ca-file to the server args once; the base leaves it off', (t) => {
    t.diagnostic(`overlay rendered from ${overlay.source}`);
    assert.deepEqual(caArgs, [...args, '--client-ca-file=/etc/tolerator/client-ca/ca.crt']);
    assert.equal(flagValue(args, '--client-ca-file'), undefined, 'managed control planes cannot present a client certificate');
  });

  it('mounts the Secret tolerator-client-ca as a directory where the flag points', () => {
    const volume = podSpec(withCa).volumes?.find((v) => v.secret?.secretName === 'tolerator-client-ca');
    assert.ok(volume, 'no volume of Secret tolerator-client-ca');
    assert.equal(volume.secret?.optional, undefined, 'the pod waits for the CA rather than starting without it');
    const mount = caContainer.volumeMounts?.find((m) => m.name === volume.name);
    assert.ok(mount, 'the Secret volume is not mounted');
    assert.equal(mount.subPath, undefined, 'subPath mounts never see Secret updates');
    assert.equal(mount.readOnly, true);
    const flag = flagValue(caArgs, '--client-ca-file') ?? '';
    assert.equal(posix.dirname(flag), mount.mountPath);
    assert.equal(posix.basename(flag), 'ca.crt');
  });

  it("changes nothing but the Deployment's args, mounts and volumes", () => {
    const others = (list: KubeObject[]): KubeObject[] => list.filter((d) => d.kind !== 'Deployment');
    assert.deepEqual(others(overlay.docs), others(docs));
    const strip = (d: IDeployment): unknown => {
      const copy = structuredClone(d);
      const spec = copy.spec?.template.spec;
      if (spec) {
        delete spec.volumes;
        for (const c of spec.containers) {
          delete c.args;
          delete c.volumeMounts;
        }
      }
      return copy;
    };
    assert.deepEqual(strip(withCa), strip(deployment));
  });

  it('renders the same from the raw files as kubectl does', { skip: overlay.source === 'raw files' && 'kubectl not found' }, () => {
    const key = (d: KubeObject): string => `${d.kind}/${d.metadata.namespace ?? ''}/${d.metadata.name}`;
    assert.deepEqual(new Map(renderFromFiles(dir).map((d) => [key(d), d])), new Map(overlay.docs.map((d) => [key(d), d])));
  });
});

describe('overlays/events', () => {
  const dir = join(ROOT, 'deploy', 'overlays', 'events');
  const overlay = render(dir);
  const webhooksOf = (list: readonly KubeObject[], kind: string): { name: string; sideEffects: string }[] =>
    (
      (
        list.find((d) => d.kind === kind && d.metadata.name === 'tolerator') as
          (KubeObject & { webhooks: { name: string; sideEffects: string }[] }) | undefined
      )?.webhooks ?? []
    ).map(({ name, sideEffects }) => ({ name, sideEffects }));

  it('adds --emit-events to the server args once; the base leaves Events off', (t) => {
    t.diagnostic(`overlay rendered from ${overlay.source}`);
    assert.deepEqual(serverContainer(one(overlay.docs, Deployment.is, 'tolerator')).args, [...args, '--emit-events']);
    assert.equal(args.includes('--emit-events'), false);
  });

  it("grants exactly create and patch on events.k8s.io events, bound to the server's ServiceAccount; the base grants no Event", () => {
    const role = one(overlay.docs, ClusterRole.is, 'tolerator-events');
    assert.deepEqual(role.rules, [{ apiGroups: ['events.k8s.io'], resources: ['events'], verbs: ['create', 'patch'] }]);
    const binding = one(overlay.docs, ClusterRoleBinding.is, 'tolerator-events');
    assert.deepEqual(binding.roleRef, { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'tolerator-events' });
    assert.deepEqual(binding.subjects, [{ kind: 'ServiceAccount', name: podSpec(deployment).serviceAccountName, namespace: NAMESPACE }]);
    const grantsEvents = (list: readonly KubeObject[]): boolean =>
      list.some(
        (d) =>
          (d as { rules?: { apiGroups?: string[]; resources?: string[] }[] }).rules?.some((r) => r.resources?.includes('events')) === true,
      );
    assert.equal(grantsEvents(docs), false);
  });

  it('declares the pod webhooks sideEffects NoneOnDryRun (an Event is a side effect, suppressed on a dry run), the others None', () => {
    assert.deepEqual(webhooksOf(overlay.docs, 'MutatingWebhookConfiguration'), [
      { name: 'mutate.tolerator.dev', sideEffects: 'NoneOnDryRun' },
    ]);
    assert.deepEqual(webhooksOf(overlay.docs, 'ValidatingWebhookConfiguration'), [
      { name: 'validate.tolerator.dev', sideEffects: 'NoneOnDryRun' },
      { name: 'validate-nodepools.tolerator.dev', sideEffects: 'None' },
      { name: 'devicetaintrules.validate.tolerator.dev', sideEffects: 'None' },
    ]);
    for (const kind of ['MutatingWebhookConfiguration', 'ValidatingWebhookConfiguration']) {
      assert.deepEqual(new Set(webhooksOf(docs, kind).map((w) => w.sideEffects)), new Set(['None']), `the base's ${kind}`);
    }
  });

  it('changes nothing else: the base objects stay as they are', () => {
    const strip = (list: readonly KubeObject[]): unknown[] =>
      list
        .filter((d) => d.kind !== 'Deployment' && !d.metadata.name.startsWith('tolerator-events'))
        .map((d) => {
          const copy = structuredClone(d) as KubeObject & { webhooks?: { sideEffects?: string }[] };
          for (const webhook of copy.webhooks ?? []) delete webhook.sideEffects;
          return copy;
        });
    assert.deepEqual(strip(overlay.docs), strip(docs));
  });

  it('renders the same from the raw files as kubectl does', { skip: overlay.source === 'raw files' && 'kubectl not found' }, () => {
    const key = (d: KubeObject): string => `${d.kind}/${d.metadata.namespace ?? ''}/${d.metadata.name}`;
    assert.deepEqual(new Map(renderFromFiles(dir).map((d) => [key(d), d])), new Map(overlay.docs.map((d) => [key(d), d])));
  });
});

describe('overlays/audit', () => {
  const dir = join(ROOT, 'deploy', 'overlays', 'audit');
  const overlay = render(dir);

  it('adds --audit-interval and --audit-lease to the server args once; the base leaves the audit off', (t) => {
    t.diagnostic(`overlay rendered from ${overlay.source}`);
    const audited = one(overlay.docs, Deployment.is, 'tolerator');
    assert.deepEqual(serverContainer(audited).args, [...args, '--audit-interval=1h', '--audit-lease=tolerator-system/tolerator-audit']);
    assert.equal(flagValue(args, '--audit-interval'), undefined);
  });

  it('grants get and update on the audit Lease by name, and create on leases, in its own namespace only', () => {
    const role = overlay.docs.find((d) => d.kind === 'Role' && d.metadata.name === 'tolerator-audit-lease') as
      (KubeObject & { rules: { apiGroups: string[]; resources: string[]; resourceNames?: string[]; verbs: string[] }[] }) | undefined;
    assert.ok(role !== undefined, 'a Role tolerator-audit-lease');
    assert.equal(role.metadata.namespace, NAMESPACE);
    assert.deepEqual(role.rules, [
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], resourceNames: ['tolerator-audit'], verbs: ['get', 'update'] },
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create'] },
    ]);
    const binding = overlay.docs.find((d) => d.kind === 'RoleBinding' && d.metadata.name === 'tolerator-audit-lease') as
      (KubeObject & { roleRef: unknown; subjects: unknown }) | undefined;
    assert.deepEqual(binding?.roleRef, { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'tolerator-audit-lease' });
    assert.deepEqual(binding.subjects, [{ kind: 'ServiceAccount', name: podSpec(deployment).serviceAccountName, namespace: NAMESPACE }]);
    assert.ok(!docs.some((d) => d.kind === 'Role' && d.metadata.name === 'tolerator-audit-lease'), 'the base has no Lease grant');
  });

  it("grants exactly list on pods and ResourceClaims and writing the reports, bound to the server's ServiceAccount", () => {
    const role = one(overlay.docs, ClusterRole.is, 'tolerator-audit');
    const grants = (role.rules ?? []).flatMap((rule) =>
      (rule.apiGroups ?? []).flatMap((g) => (rule.resources ?? []).flatMap((r) => rule.verbs.map((v) => `${g}/${r}:${v}`))),
    );
    assert.deepEqual(grants.sort(), [
      '/pods:list',
      'openreports.io/reports:create',
      'openreports.io/reports:delete',
      'openreports.io/reports:list',
      'openreports.io/reports:update',
      'resource.k8s.io/resourceclaims:list',
      'wgpolicyk8s.io/policyreports:create',
      'wgpolicyk8s.io/policyreports:delete',
      'wgpolicyk8s.io/policyreports:list',
      'wgpolicyk8s.io/policyreports:update',
    ]);
    const binding = one(overlay.docs, ClusterRoleBinding.is, 'tolerator-audit');
    assert.deepEqual(binding.roleRef, { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'tolerator-audit' });
    assert.deepEqual(binding.subjects, [{ kind: 'ServiceAccount', name: podSpec(deployment).serviceAccountName, namespace: NAMESPACE }]);
  });

  it('changes nothing else: the base objects stay as they are', () => {
    const base = (list: KubeObject[]): KubeObject[] =>
      list.filter((d) => d.kind !== 'Deployment' && !d.metadata.name.startsWith('tolerator-audit'));
    assert.deepEqual(base(overlay.docs), base(docs));
  });

  it('renders the same from the raw files as kubectl does', { skip: overlay.source === 'raw files' && 'kubectl not found' }, () => {
    const key = (d: KubeObject): string => `${d.kind}/${d.metadata.namespace ?? ''}/${d.metadata.name}`;
    assert.deepEqual(new Map(renderFromFiles(dir).map((d) => [key(d), d])), new Map(overlay.docs.map((d) => [key(d), d])));
  });
});
