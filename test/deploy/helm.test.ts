// The Helm chart deploy/helm/tolerator, checked by a real helm (test/support/helm-binary.ts): it
// lints strictly, renders with its defaults and with every option, its schema refuses what is not
// a value of it, and its default render agrees with `kubectl kustomize deploy/` on every field the
// cluster acts on, so that the two installs cannot drift apart.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { Deployment } from 'kubernetes-models/apps/v1';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2';
import { MutatingWebhookConfiguration, ValidatingWebhookConfiguration } from 'kubernetes-models/admissionregistration.k8s.io/v1';
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { ClusterRole, ClusterRoleBinding, Role, RoleBinding } from 'kubernetes-models/rbac.authorization.k8s.io/v1';
import { Job } from 'kubernetes-models/batch/v1';
import { ConfigMap, Namespace, ResourceQuota, Secret, Service, ServiceAccount } from 'kubernetes-models/v1';
import { Certificate, Issuer } from '@kubernetes-models/cert-manager/cert-manager.io/v1';
import { PrometheusRule, ServiceMonitor } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1';
import { featureGateNames } from '../../src/api/feature-gates.js';
import { parseTenancyPolicy } from '../../src/tenancy/policy.js';
import { helmBinary } from '../support/helm-binary.js';
import { at, CHART_DIR, find, hasKubectl, parseManifests, renderKustomize, ROOT, type KubeObject } from '../support/rendered-manifests.js';

const helm = helmBinary();
const skipHelm = 'skip' in helm ? `helm unavailable: ${helm.skip}` : false;
const skipKustomize = skipHelm || (hasKubectl() ? false : 'kubectl not found: nothing to compare the chart with');
const RELEASE = 'tolerator';
const NAMESPACE = 'tolerator-system';
// The oldest Kubernetes the chart supports (Chart.yaml kubeVersion): webhook matchConditions.
const KUBE_VERSION = '1.30.0';
const FIXTURES = join(ROOT, 'test', 'fixtures', 'helm');

interface Run {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

function runHelm(args: readonly string[]): Run {
  assert.ok('path' in helm, 'helm unavailable');
  const run = spawnSync(helm.path, args, { encoding: 'utf8' });
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}

function template(args: readonly string[] = [], release = RELEASE, namespace = NAMESPACE): KubeObject[] {
  const run = runHelm(['template', release, CHART_DIR, '--namespace', namespace, '--kube-version', KUBE_VERSION, ...args]);
  assert.equal(run.status, 0, `helm template failed:\n${run.stderr}`);
  return parseManifests(run.stdout, 'helm template');
}

/** `helm template` read as kubectl and the API server read YAML: 1.1 (sigs.k8s.io/yaml), where a bare yes is true. */
function templateAsYaml11(args: readonly string[]): KubeObject[] {
  const run = runHelm(['template', RELEASE, CHART_DIR, '--namespace', NAMESPACE, '--kube-version', KUBE_VERSION, ...args]);
  assert.equal(run.status, 0, run.stderr);
  return parseAllDocuments(run.stdout, { version: '1.1' })
    .map((document) => document.toJS() as KubeObject | null)
    .filter((object): object is KubeObject => object !== null);
}

/** `helm template` expected to fail: its error text. */
function templateError(args: readonly string[]): string {
  const run = runHelm(['template', RELEASE, CHART_DIR, '--namespace', NAMESPACE, '--kube-version', KUBE_VERSION, ...args]);
  assert.notEqual(run.status, 0, `helm template accepted ${args.join(' ')}`);
  return run.stderr;
}

const names = (objects: readonly KubeObject[]): string[] => objects.map((o) => `${o.kind}/${o.metadata.name}`).sort();
/** A Helm hook (the pre-delete Job and its grant): run around the release, not part of it. */
const isHook = (object: KubeObject): boolean => object.metadata.annotations?.['helm.sh/hook'] !== undefined;
const releaseObjects = (objects: readonly KubeObject[]): KubeObject[] => objects.filter((object) => !isHook(object));

type Model = new (data: never) => { validate(): void };
const MODELS: Readonly<Record<string, Model>> = {
  Namespace,
  ServiceAccount,
  ClusterRole,
  ClusterRoleBinding,
  Role,
  RoleBinding,
  Secret,
  Job,
  ConfigMap,
  ResourceQuota,
  Service,
  Deployment,
  HorizontalPodAutoscaler,
  PodDisruptionBudget,
  NetworkPolicy,
  MutatingWebhookConfiguration,
  ValidatingWebhookConfiguration,
  Issuer,
  Certificate,
  ServiceMonitor,
  PrometheusRule,
};

function assertSchemaValid(objects: readonly KubeObject[]): void {
  for (const object of objects) {
    const Model = MODELS[object.kind];
    assert.ok(Model, `no schema for ${object.kind}`);
    assert.doesNotThrow(() => {
      new Model(object as never).validate();
    }, `${object.kind}/${object.metadata.name}`);
  }
}

function container(objects: readonly KubeObject[]): Record<string, unknown> {
  const containers = at(find(objects, 'Deployment', 'tolerator'), 'spec.template.spec.containers') as Record<string, unknown>[];
  const server = containers.find((c) => c.name === 'tolerator');
  assert.ok(server, 'no container named tolerator');
  return server;
}

describe('helm', { skip: skipHelm }, () => {
  it('is the pinned helm v3.17', () => {
    const run = runHelm(['version', '--short']);
    assert.equal(run.status, 0, run.stderr);
    assert.match(run.stdout, /^v3\.17\./);
  });

  for (const [what, args] of [
    ['its defaults', []],
    ['every option', ['--values', join(FIXTURES, 'every-option.yaml')]],
    ['a provided certificate', ['--values', join(FIXTURES, 'provided-certificate.yaml')]],
    ['self-managed certificates', ['--set', 'certificates.mode=selfManaged']],
  ] as const) {
    it(`lints the chart with --strict, with ${what}`, () => {
      const run = runHelm(['lint', '--strict', CHART_DIR, '--namespace', NAMESPACE, '--kube-version', KUBE_VERSION, ...args]);
      assert.equal(run.status, 0, `${run.stdout}\n${run.stderr}`);
      assert.match(run.stdout, /1 chart\(s\) linted, 0 chart\(s\) failed/);
      assert.doesNotMatch(run.stdout, /\[(WARNING|ERROR)\]/);
    });
  }

  it('refuses a Kubernetes older than 1.30 (webhook matchConditions)', () => {
    const run = runHelm(['template', RELEASE, CHART_DIR, '--kube-version', '1.29.0']);
    assert.notEqual(run.status, 0);
    assert.match(run.stderr, /chart requires kubeVersion: >=1\.30\.0-0 which is incompatible with Kubernetes v1\.29\.0/);
  });
});

describe('helm template with the defaults', { skip: skipHelm }, () => {
  const objects = skipHelm ? [] : template();

  it('renders every object deploy/base has but the Namespace, under the same names', () => {
    // A chart cannot create the namespace it is installed into (helm stores the release there
    // first): `helm install --create-namespace`, then the README's labels for Pod Security.
    assert.deepEqual(names(releaseObjects(objects)), [
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
      'NetworkPolicy/tolerator',
      'PodDisruptionBudget/tolerator',
      'ResourceQuota/tolerator-critical-pods',
      'Service/tolerator',
      'ServiceAccount/tolerator',
      'ValidatingWebhookConfiguration/tolerator',
    ]);
  });

  it('passes the kubernetes-models / cert-manager schema for every object', () => {
    assertSchemaValid(objects);
  });

  it('leaves the replica count to the autoscaler, so that helm upgrade does not reset it', () => {
    assert.equal(at(find(objects, 'Deployment', 'tolerator'), 'spec.replicas'), undefined);
    assert.equal(at(find(objects, 'HorizontalPodAutoscaler', 'tolerator'), 'spec.minReplicas'), 2);
  });

  it('refuses an autoscaler whose minimum is above its maximum', () => {
    assert.match(
      templateError(['--set', 'autoscaling.minReplicas=6']),
      /autoscaling\.minReplicas \(6\) is above autoscaling\.maxReplicas \(5\)/,
    );
  });

  it('refuses a disruption budget that no replica count can meet while a node drains', () => {
    // minAvailable equal to the fewest replicas: a drain of a node running one of them waits forever.
    for (const [args, message] of [
      [
        ['--set', 'autoscaling.enabled=false', '--set', 'replicas=1'],
        /podDisruptionBudget\.minAvailable \(1\) leaves no replica to evict with 1 replica/,
      ],
      [['--set', 'autoscaling.minReplicas=1'], /podDisruptionBudget\.minAvailable \(1\) leaves no replica to evict with 1 replica/],
      [['--set', 'podDisruptionBudget.minAvailable=100%'], /podDisruptionBudget\.minAvailable \(100%\) leaves no replica to evict/],
    ] as const) {
      assert.match(templateError(args), message);
    }
    // Without the budget, or with room for one eviction, it renders.
    assert.ok(template(['--set', 'autoscaling.enabled=false', '--set', 'replicas=1', '--set', 'podDisruptionBudget.enabled=false']));
    assert.ok(template(['--set', 'podDisruptionBudget.minAvailable=50%']));
  });

  it('renders no monitoring object unless asked', () => {
    assert.deepEqual(
      objects.filter((o) => ['ServiceMonitor', 'PrometheusRule'].includes(o.kind) || o.metadata.name.endsWith('-dashboard')),
      [],
    );
  });
});

describe('helm template with every option', { skip: skipHelm }, () => {
  const objects = skipHelm ? [] : template(['--values', join(FIXTURES, 'every-option.yaml')]);
  const server = skipHelm ? {} : container(objects);
  const pod = skipHelm ? {} : (at(find(objects, 'Deployment', 'tolerator'), 'spec.template') as Record<string, unknown>);

  it('passes the kubernetes-models / cert-manager schema for every object', () => {
    assertSchemaValid(objects);
  });

  it('pulls the image by digest', () => {
    assert.equal(
      server.image,
      'registry.example.com/platform/tolerator@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef',
    );
    assert.equal(server.imagePullPolicy, 'Always');
    assert.deepEqual(at(pod, 'spec.imagePullSecrets'), [{ name: 'registry-credentials' }]);
  });

  it('appends feature gates, client CA, log level, the audit interval and extra arguments to the server contract, and sizes the shutdown from the longer timeout', () => {
    assert.deepEqual(server.args, [
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
      '10',
      '--feature-gates=PodLevelResources=false,TaintTolerationComparisonOperators=true',
      '--client-ca-file=/etc/tolerator/client-ca/ca.crt',
      '--log-level=debug',
      '--audit-interval=1h30m',
      '--audit-lease=tolerator-system/tolerator-audit',
      '--default-not-ready-toleration-seconds=120',
    ]);
    // 5 s drain + 10 s (validating.timeoutSeconds) + 5 s margin.
    assert.equal(at(pod, 'spec.terminationGracePeriodSeconds'), 20);
  });

  it('mounts the client CA Secret and the extra volumes', () => {
    assert.deepEqual(
      (server.volumeMounts as { name: string; mountPath: string }[]).map((m) => [m.name, m.mountPath]),
      [
        ['tls', '/etc/tolerator/tls'],
        ['policies', '/etc/tolerator/policies'],
        ['tmp', '/tmp'],
        ['client-ca', '/etc/tolerator/client-ca'],
        ['admission-config', '/etc/tolerator/admission'],
      ],
    );
    const volumes = at(pod, 'spec.volumes') as Record<string, unknown>[];
    assert.deepEqual(
      volumes.find((v) => v.name === 'client-ca'),
      { name: 'client-ca', secret: { secretName: 'apiserver-webhook-client-ca' } },
    );
  });

  it('places the pods by the given scheduling values', () => {
    assert.equal(at(pod, 'spec.priorityClassName'), 'platform-critical');
    assert.deepEqual(at(pod, 'spec.nodeSelector'), { 'node-role.kubernetes.io/platform': '' });
    assert.deepEqual(at(pod, 'spec.tolerations'), [{ key: 'platform', operator: 'Equal', value: 'true', effect: 'NoSchedule' }]);
    assert.equal(at(pod, 'spec.affinity.podAntiAffinity'), undefined);
    assert.equal(
      at(pod, 'spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms.0.matchExpressions.0.key'),
      'kubernetes.io/arch',
    );
    assert.equal(at(pod, 'spec.topologySpreadConstraints.0.topologyKey'), 'topology.kubernetes.io/zone');
    assert.equal(at(pod, 'metadata.labels.team'), 'platform');
    assert.equal((at(pod, 'metadata.annotations') as Record<string, string>)['example.com/owner'], 'platform');
    assert.deepEqual(server.resources, { requests: { cpu: '200m', memory: '256Mi' }, limits: { cpu: '2', memory: '1Gi' } });
  });

  it('sets the replica count and renders no autoscaler when autoscaling is off', () => {
    assert.equal(at(find(objects, 'Deployment', 'tolerator'), 'spec.replicas'), 3);
    assert.equal(
      objects.find((o) => o.kind === 'HorizontalPodAutoscaler'),
      undefined,
    );
  });

  it('sets each webhook’s failure policy, timeout and reinvocation, and excludes the extra namespaces and the opt-out label', () => {
    const mutating = at(find(objects, 'MutatingWebhookConfiguration', 'tolerator'), 'webhooks.0') as Record<string, unknown>;
    const validating = at(find(objects, 'ValidatingWebhookConfiguration', 'tolerator'), 'webhooks.0') as Record<string, unknown>;
    assert.deepEqual([mutating.failurePolicy, mutating.timeoutSeconds, mutating.reinvocationPolicy], ['Fail', 3, 'Never']);
    assert.deepEqual([validating.failurePolicy, validating.timeoutSeconds], ['Ignore', 10]);
    for (const webhook of [mutating, validating]) {
      assert.deepEqual(at(webhook, 'namespaceSelector.matchExpressions'), [
        {
          key: 'kubernetes.io/metadata.name',
          operator: 'NotIn',
          values: ['kube-system', 'kube-node-lease', 'tolerator-system', 'cert-manager', 'monitoring'],
        },
        { key: 'example.com/tolerator-ignore', operator: 'NotIn', values: ['true'] },
      ]);
    }
  });

  it('issues the serving certificate from the given issuer, without creating a CA', () => {
    assert.deepEqual(
      objects.filter((o) => o.kind === 'Issuer' || o.kind === 'Certificate').map((o) => o.metadata.name),
      ['tolerator-serving'],
    );
    const serving = find(objects, 'Certificate', 'tolerator-serving');
    assert.deepEqual(at(serving, 'spec.issuerRef'), { group: 'cert-manager.io', kind: 'ClusterIssuer', name: 'platform-ca' });
    assert.deepEqual([at(serving, 'spec.duration'), at(serving, 'spec.renewBefore')], ['720h', '240h']);
  });

  it('writes inline policies into the ConfigMap, given as text or as a mapping', () => {
    const data = at(find(objects, 'ConfigMap', 'tolerator-policies'), 'data') as Record<string, string>;
    assert.deepEqual(Object.keys(data).sort(), ['as-mapping.yaml', 'as-text.yaml']);
    assert.match(data['as-text.yaml']!, /^apiVersion: tolerator\.dev\/v1alpha1\nkind: TenancyPolicy\nmetadata: \{ name: as-text \}/);
    assert.match(data['as-mapping.yaml']!, /enforcement: Warn/);
    assert.match(data['as-mapping.yaml']!, /group: namespaceObject\.metadata\.\?labels\['team'\]\.orValue\(''\)/);
  });

  it('opens the network policy to the given peers only', () => {
    assert.deepEqual(at(find(objects, 'NetworkPolicy', 'tolerator'), 'spec.ingress'), [
      {
        ports: [{ protocol: 'TCP', port: 8443 }],
        from: [
          { ipBlock: { cidr: '192.0.2.0/28' } },
          { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } },
        ],
      },
    ]);
  });

  it('renders the PodDisruptionBudget and quota with the given numbers', () => {
    assert.equal(at(find(objects, 'PodDisruptionBudget', 'tolerator'), 'spec.minAvailable'), 2);
    assert.equal(at(find(objects, 'ResourceQuota', 'tolerator-critical-pods'), 'spec.hard.pods'), '20');
  });

  it('renders the ServiceMonitor with the Prometheus selector label, the CA Secret and the Service name to verify', () => {
    const monitor = find(objects, 'ServiceMonitor', 'tolerator');
    assert.equal(monitor.metadata.labels?.release, 'kube-prometheus-stack');
    assert.deepEqual(at(monitor, 'spec.endpoints.0.tlsConfig'), {
      serverName: 'tolerator.tolerator-system.svc',
      ca: { secret: { name: 'platform-ca-bundle', key: 'bundle.pem' } },
    });
    assert.deepEqual([at(monitor, 'spec.endpoints.0.interval'), at(monitor, 'spec.endpoints.0.scrapeTimeout')], ['15s', '5s']);
  });

  it('renders the PrometheusRule and the dashboard ConfigMap where Grafana’s sidecar looks', () => {
    assert.equal(find(objects, 'PrometheusRule', 'tolerator').metadata.labels?.release, 'kube-prometheus-stack');
    const dashboard = find(objects, 'ConfigMap', 'tolerator-dashboard');
    assert.equal(dashboard.metadata.namespace, 'monitoring');
    assert.equal(dashboard.metadata.labels?.grafana_dashboard, '1');
    assert.equal(dashboard.metadata.annotations?.grafana_folder, 'Platform');
  });
});

describe('helm template with a provided certificate', { skip: skipHelm }, () => {
  const objects = skipHelm ? [] : template(['--values', join(FIXTURES, 'provided-certificate.yaml')]);

  it('renders no cert-manager object, mounts the Secret and puts the CA bundle in both webhooks', () => {
    assert.deepEqual(
      objects.filter((o) => o.apiVersion.startsWith('cert-manager.io/')),
      [],
    );
    const volumes = at(find(objects, 'Deployment', 'tolerator'), 'spec.template.spec.volumes') as Record<string, unknown>[];
    assert.deepEqual(
      volumes.find((v) => v.name === 'tls'),
      { name: 'tls', secret: { secretName: 'tolerator-serving-provided' } },
    );
    for (const kind of ['MutatingWebhookConfiguration', 'ValidatingWebhookConfiguration']) {
      const configuration = find(objects, kind, 'tolerator');
      assert.equal(configuration.metadata.annotations, undefined, `${kind}: no cainjector annotation`);
      assert.equal(at(configuration, 'webhooks.0.clientConfig.caBundle'), 'LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==');
    }
  });

  it('scrapes without verification when told so', () => {
    assert.deepEqual(at(find(objects, 'ServiceMonitor', 'tolerator'), 'spec.endpoints.0.tlsConfig'), {
      serverName: 'tolerator.tolerator-system.svc',
      insecureSkipVerify: true,
    });
  });

  it('refuses to render without the Secret or the CA bundle', () => {
    assert.match(
      templateError(['--set', 'certificates.mode=existingSecret', '--set', 'tls.caBundle=AAAA']),
      /tls\.existingSecret is required with certificates\.mode=existingSecret/,
    );
    assert.match(
      templateError(['--set', 'certificates.mode=existingSecret', '--set', 'tls.existingSecret=s']),
      /tls\.caBundle is required with certificates\.mode=existingSecret/,
    );
  });
});

describe('helm template under another release name and namespace', { skip: skipHelm }, () => {
  const objects = skipHelm ? [] : template([], 'platform', 'platform-system');

  it('names every object after the release and keeps the names consistent with each other', () => {
    assert.ok(
      names(objects).every((name) => name.split('/')[1]!.startsWith('platform-tolerator')),
      names(objects).join(', '),
    );
    const serving = find(objects, 'Certificate', 'platform-tolerator-serving');
    assert.deepEqual(at(serving, 'spec.dnsNames'), [
      'platform-tolerator.platform-system.svc',
      'platform-tolerator.platform-system.svc.cluster.local',
    ]);
    for (const kind of ['MutatingWebhookConfiguration', 'ValidatingWebhookConfiguration']) {
      const configuration = find(objects, kind, 'platform-tolerator');
      assert.equal(configuration.metadata.annotations?.['cert-manager.io/inject-ca-from'], 'platform-system/platform-tolerator-serving');
      assert.deepEqual(at(configuration, 'webhooks.0.clientConfig.service.name'), 'platform-tolerator');
      assert.deepEqual(at(configuration, 'webhooks.0.clientConfig.service.namespace'), 'platform-system');
      // The release's own namespace is never reviewed, whatever it is called.
      assert.deepEqual(at(configuration, 'webhooks.0.namespaceSelector.matchExpressions.0.values'), [
        'kube-system',
        'kube-node-lease',
        'platform-system',
      ]);
    }
  });
});

describe('helm template with self-managed certificates (certificates.mode=selfManaged)', { skip: skipHelm }, () => {
  const objects = skipHelm ? [] : template(['--set', 'certificates.mode=selfManaged']);

  it('renders no cert-manager object, an empty Opaque Secret for tolerator to fill, and passes the schemas', () => {
    assert.deepEqual(
      objects.filter((o) => o.apiVersion.startsWith('cert-manager.io/')),
      [],
    );
    const secret = find(objects, 'Secret', 'tolerator-tls');
    assert.equal(secret.type, 'Opaque');
    assert.equal(secret.data, undefined, 'no data: helm upgrade must leave what tolerator wrote');
    assertSchemaValid(objects);
  });

  it('grants get and update on that one Secret and those two webhook configurations, by name, and nothing else', () => {
    assert.deepEqual(at(find(objects, 'Role', 'tolerator-certificates'), 'rules'), [
      { apiGroups: [''], resources: ['secrets'], resourceNames: ['tolerator-tls'], verbs: ['get', 'update'] },
    ]);
    assert.deepEqual(at(find(objects, 'ClusterRole', 'tolerator-certificates'), 'rules'), [
      {
        apiGroups: ['admissionregistration.k8s.io'],
        resources: ['mutatingwebhookconfigurations', 'validatingwebhookconfigurations'],
        resourceNames: ['tolerator'],
        verbs: ['get', 'update'],
      },
    ]);
    for (const kind of ['RoleBinding', 'ClusterRoleBinding']) {
      assert.deepEqual(at(find(objects, kind, 'tolerator-certificates'), 'subjects'), [
        { kind: 'ServiceAccount', name: 'tolerator', namespace: 'tolerator-system' },
      ]);
    }
  });

  it('runs serve with --certificate-secret instead of certificate files, and mounts no certificate', () => {
    const args = container(objects).args as string[];
    assert.deepEqual(args.slice(3, 10), [
      '--certificate-secret',
      'tolerator-system/tolerator-tls',
      '--certificate-service',
      'tolerator',
      '--certificate-webhooks=tolerator',
      '--certificate-validity=8760h',
      '--certificate-ca-validity=87600h',
    ]);
    assert.ok(!args.includes('--tls-cert-file'));
    const volumes = at(find(objects, 'Deployment', 'tolerator'), 'spec.template.spec.volumes') as { name: string }[];
    assert.deepEqual(
      volumes.map((volume) => volume.name),
      ['policies', 'tmp'],
    );
  });

  it('leaves both webhooks without caBundle or cainjector annotation: tolerator writes the caBundle', () => {
    for (const kind of ['MutatingWebhookConfiguration', 'ValidatingWebhookConfiguration']) {
      const configuration = find(objects, kind, 'tolerator');
      assert.equal(configuration.metadata.annotations, undefined, kind);
      assert.equal(at(configuration, 'webhooks.0.clientConfig.caBundle'), undefined, kind);
    }
  });

  it('refuses a lifetime that is not a duration', () => {
    assert.match(templateError(['--set', 'certificates.mode=selfManaged', '--set', 'certificates.selfManaged.validity=1year']), /validity/);
    assert.match(templateError(['--set', 'certificates.mode=selfManaged-ish']), /certificates\.mode/);
  });
});

describe('the self-managed chart agrees with kubectl kustomize deploy/overlays/self-managed-certs', { skip: skipKustomize }, () => {
  const chart = skipKustomize ? [] : releaseObjects(template(['--set', 'certificates.mode=selfManaged']));
  const kustomize = skipKustomize ? [] : renderKustomize(join(ROOT, 'deploy', 'overlays', 'self-managed-certs'));

  it('on the server contract, the webhooks, the Secret and the certificate grants', () => {
    assert.deepEqual(serverContract(chart), serverContract(kustomize));
    for (const kind of ['MutatingWebhookConfiguration', 'ValidatingWebhookConfiguration']) {
      assert.deepEqual(webhooksOf(chart, kind), webhooksOf(kustomize, kind));
      assert.equal(
        find(kustomize, kind, 'tolerator').metadata.annotations,
        undefined,
        `${kind}: the overlay drops cainjector's annotation`,
      );
    }
    assert.deepEqual(
      pick(find(chart, 'Secret', 'tolerator-tls'), ['type', 'data']),
      pick(find(kustomize, 'Secret', 'tolerator-tls'), ['type', 'data']),
    );
    for (const kind of ['Role', 'ClusterRole']) {
      assert.deepEqual(
        at(find(chart, kind, 'tolerator-certificates'), 'rules'),
        at(find(kustomize, kind, 'tolerator-certificates'), 'rules'),
      );
    }
    assert.deepEqual(
      kustomize.filter((o) => o.apiVersion.startsWith('cert-manager.io/')),
      [],
    );
  });
});

describe('helm uninstall deletes the webhook configurations first (the pre-delete hook)', { skip: skipHelm }, () => {
  const objects = skipHelm ? [] : template();
  const hooks = objects.filter(isHook);

  it('runs `tolerator delete-webhooks` from tolerator’s own image, after its grant exists', () => {
    assert.deepEqual(names(hooks), [
      'ClusterRole/tolerator-uninstall',
      'ClusterRoleBinding/tolerator-uninstall',
      'Job/tolerator-uninstall',
      'ServiceAccount/tolerator-uninstall',
    ]);
    for (const hook of hooks) {
      assert.equal(hook.metadata.annotations?.['helm.sh/hook'], 'pre-delete', hook.kind);
      assert.equal(hook.metadata.annotations['helm.sh/hook-delete-policy'], 'before-hook-creation,hook-succeeded', hook.kind);
      assert.equal(hook.metadata.annotations['helm.sh/hook-weight'], hook.kind === 'Job' ? '0' : '-10', hook.kind);
    }
    const job = find(objects, 'Job', 'tolerator-uninstall');
    const [hookContainer] = at(job, 'spec.template.spec.containers') as Record<string, unknown>[];
    assert.equal(hookContainer?.image, container(objects).image);
    assert.deepEqual(hookContainer?.args, ['delete-webhooks', '--name', 'tolerator']);
    assert.equal(at(job, 'spec.template.spec.serviceAccountName'), 'tolerator-uninstall');
    assert.equal(at(job, 'spec.template.spec.restartPolicy'), 'Never');
  });

  it('may delete those two configurations by name and nothing else', () => {
    assert.deepEqual(at(find(objects, 'ClusterRole', 'tolerator-uninstall'), 'rules'), [
      {
        apiGroups: ['admissionregistration.k8s.io'],
        resources: ['mutatingwebhookconfigurations', 'validatingwebhookconfigurations'],
        resourceNames: ['tolerator'],
        verbs: ['delete'],
      },
    ]);
  });

  it('pulls the hook’s image with the chart’s imagePullSecrets', () => {
    const withSecrets = template(['--set', 'imagePullSecrets[0].name=registry-credentials']);
    for (const name of ['tolerator', 'tolerator-uninstall']) {
      const kind = name === 'tolerator' ? 'Deployment' : 'Job';
      assert.deepEqual(at(find(withSecrets, kind, name), 'spec.template.spec.imagePullSecrets'), [{ name: 'registry-credentials' }], kind);
    }
  });

  it('renders no hook with uninstallHook.enabled=false', () => {
    assert.deepEqual(template(['--set', 'uninstallHook.enabled=false']).filter(isHook), []);
  });
});

describe('helm lint into the default namespace', { skip: skipHelm }, () => {
  it('fails with the reason, where lint mode turns the chart’s `fail` into an [INFO] line and exit 0', () => {
    const run = runHelm(['lint', CHART_DIR, '--kube-version', KUBE_VERSION]);
    assert.equal(run.status, 1, `${run.stdout}\n${run.stderr}`);
    assert.match(
      run.stdout,
      /\[ERROR\] templates\/namespace-guard\.yaml: .*release namespace default.*install into a namespace of its own \(--namespace tolerator-system\)/,
    );
  });
});

describe('helm template into the default namespace', { skip: skipHelm }, () => {
  it('refuses it: the release namespace is never reviewed, and the pods of default would escape every rule', () => {
    // `helm install` without --namespace installs into default.
    const run = runHelm(['template', RELEASE, CHART_DIR, '--kube-version', KUBE_VERSION]);
    assert.notEqual(run.status, 0, 'helm template rendered a release in default');
    assert.match(run.stderr, /the release namespace is never reviewed, and "default" holds ordinary workloads/);
  });
});

describe('helm template with an opt-out label YAML would read as another value', { skip: skipHelm }, () => {
  it('writes it as a string: the key `yes` stays the label yes, not YAML 1.1’s boolean true', () => {
    const webhooks = templateAsYaml11(['--set', 'webhooks.optOutLabel=yes']).filter((object) =>
      object.kind.endsWith('WebhookConfiguration'),
    );
    assert.equal(webhooks.length, 2);
    for (const configuration of webhooks) {
      assert.equal(at(configuration, 'webhooks.0.namespaceSelector.matchExpressions.1.key'), 'yes');
    }
  });
});

describe('helm template with an inline policy key that is no policy file name', { skip: skipHelm }, () => {
  // The key is the file name in the mounted directory, and --policies reads only *.yaml, *.yml and
  // *.json (src/tenancy/policy-directory.ts): under any other key the policy was rendered, mounted,
  // ignored, and tenancy ran without it while serve logged `policies: []`.
  for (const key of ['dedicated', 'yes', 'dedicated.yaml.bak', 'dedicated.YAML']) {
    it(`refuses the key ${key} in helm template and helm lint, which tolerator would never read`, () => {
      const set = `policies.inline.${key.replaceAll('.', '\\.')}=kind: TenancyPolicy`;
      const message = new RegExp(`policies\\.inline: Property name of "${key.replaceAll('.', '\\.')}" does not match`);
      assert.match(templateError(['--set-string', set]), message);
      const lint = runHelm(['lint', '--strict', CHART_DIR, '--set-string', set]);
      assert.notEqual(lint.status, 0);
    });
  }
});

describe('values.schema.json', { skip: skipHelm }, () => {
  for (const [what, set, message] of [
    ['a typo at the top level', 'replica=3', /Additional property replica is not allowed/],
    ['a typo under image', 'image.tagg=1.0', /image: Additional property tagg is not allowed/],
    ['a typo under a webhook', 'webhooks.validating.timeout=3', /webhooks\.validating: Additional property timeout is not allowed/],
    [
      'a typo three levels down',
      'metrics.serviceMonitor.caSecret.nam=x',
      /metrics\.serviceMonitor\.caSecret: Additional property nam is not allowed/,
    ],
    [
      'an unknown feature gate',
      'featureGates.TaintTolerationComparisonOperator=true',
      /featureGates: Additional property TaintTolerationComparisonOperator is not allowed/,
    ],
    [
      'a failure policy the API server does not know',
      'webhooks.mutating.failurePolicy=Never',
      /webhooks\.mutating\.failurePolicy must be one of the following: "Ignore", "Fail"/,
    ],
    [
      'a timeout above the API server’s 30 s',
      'webhooks.validating.timeoutSeconds=31',
      /webhooks\.validating\.timeoutSeconds: Must be less than or equal to 30/,
    ],
    ['a log level the server refuses', 'logLevel=verbose', /logLevel must be one of the following/],
    ['an image digest that is not one', 'image.digest=latest', /image\.digest: Does not match pattern/],
    ['a typo in a toleration', 'tolerations[0].operater=Exists', /tolerations\.0: Additional property operater is not allowed/],
    // Rendered as YAML, `a #b` would be the key `a` (the rest a comment): another label than asked for.
    ['an opt-out label that is no label key', 'webhooks.optOutLabel=a #b', /webhooks\.optOutLabel: Does not match pattern/],
  ] as const) {
    it(`refuses ${what} in helm template, helm lint and (the same check) helm install`, () => {
      assert.match(templateError(['--set', set]), message);
      const lint = runHelm(['lint', '--strict', CHART_DIR, '--set', set]);
      assert.notEqual(lint.status, 0);
      assert.match(lint.stdout + lint.stderr, message);
    });
  }

  it('knows the TenancyPolicy spec fields the policy loader knows, so an inline policy’s typo fails at install', () => {
    const schema = JSON.parse(readFileSync(join(CHART_DIR, 'values.schema.json'), 'utf8')) as unknown;
    const mapping = (at(schema, 'properties.policies.properties.inline.additionalProperties.oneOf') as unknown[])[1];
    const schemaFields = Object.keys(at(mapping, 'properties.spec.properties') as object).sort();
    const parsed = parseTenancyPolicy(
      { apiVersion: 'tolerator.dev/v1alpha1', kind: 'TenancyPolicy', metadata: { name: 'probe' }, spec: { probe: true } },
      { file: 'probe.yaml', lineOf: () => undefined },
    );
    const unknown = parsed.errors.find((error) => error.field === 'spec.probe');
    assert.ok(unknown, 'the loader refuses an unknown spec field');
    const loaderFields = /known fields are (.*)$/.exec(unknown.message)?.[1]?.split(', ').sort();
    assert.deepEqual(schemaFields, loaderFields);
    assert.match(
      templateError(['--set', 'policies.inline.p\\.yaml.spec.exmpt=true']),
      /policies\.inline\.p\.yaml: Must validate one and only one schema/,
    );
  });

  it('knows the feature gates the server knows', () => {
    const schema = JSON.parse(readFileSync(join(CHART_DIR, 'values.schema.json'), 'utf8')) as unknown;
    assert.deepEqual(Object.keys(at(schema, 'properties.featureGates.properties') as object).sort(), [...featureGateNames].sort());
  });

  it('closes every object of the schema: additionalProperties is false, a value schema, or open only for Kubernetes objects passed through', () => {
    const schema = JSON.parse(readFileSync(join(CHART_DIR, 'values.schema.json'), 'utf8')) as unknown;
    const open: string[] = [];
    const walk = (node: unknown, path: string): void => {
      if (typeof node !== 'object' || node === null) return;
      const record = node as Record<string, unknown>;
      if (record.type === 'object') {
        assert.ok('additionalProperties' in record, `${path}: an object schema without additionalProperties accepts any typo`);
        if (record.additionalProperties === true) {
          assert.match(String(record.description), /a Kubernetes object, passed through as it is/, path);
          open.push(path);
        }
      }
      for (const [key, child] of Object.entries(record)) walk(child, `${path}/${key}`);
    };
    walk(schema, '');
    assert.deepEqual(open, [
      '/properties/affinity/properties/nodeAffinity',
      '/properties/affinity/properties/podAffinity',
      '/properties/affinity/properties/podAntiAffinity',
      '/properties/topologySpreadConstraints/items',
      '/properties/extraVolumes/items',
      '/properties/extraVolumeMounts/items',
      '/properties/networkPolicy/properties/from/items',
    ]);
  });
});

// --- agreement with kustomize ----------------------------------------------------------------------

/** Only the listed fields of an object, so that a difference names the field that differs. */
function pick(object: unknown, paths: readonly string[]): Record<string, unknown> {
  return Object.fromEntries(paths.map((path) => [path, at(object, path)]));
}

const WEBHOOK_FIELDS = [
  'name',
  'rules',
  'namespaceSelector',
  'objectSelector',
  'matchConditions',
  'failurePolicy',
  'timeoutSeconds',
  'sideEffects',
  'admissionReviewVersions',
  'reinvocationPolicy',
  'matchPolicy',
  'clientConfig.service.name',
  'clientConfig.service.namespace',
  'clientConfig.service.path',
  'clientConfig.service.port',
  'clientConfig.caBundle',
  'clientConfig.url',
];

const POD_FIELDS = [
  'spec.serviceAccountName',
  'spec.automountServiceAccountToken',
  'spec.priorityClassName',
  'spec.terminationGracePeriodSeconds',
  'spec.securityContext',
  'spec.tolerations',
  'spec.nodeSelector',
  'spec.volumes',
];

const CONTAINER_FIELDS = [
  'name',
  'image',
  'imagePullPolicy',
  'command',
  'args',
  'ports',
  'readinessProbe',
  'livenessProbe',
  'startupProbe',
  'securityContext',
  'resources',
  'volumeMounts',
];

function webhooksOf(objects: readonly KubeObject[], kind: string): Record<string, unknown>[] {
  const configuration = find(objects, kind, 'tolerator');
  return (configuration.webhooks as unknown[]).map((webhook) => pick(webhook, WEBHOOK_FIELDS));
}

function serverContract(objects: readonly KubeObject[]): Record<string, unknown> {
  const deployment = find(objects, 'Deployment', 'tolerator');
  return { pod: pick(at(deployment, 'spec.template'), POD_FIELDS), container: pick(container(objects), CONTAINER_FIELDS) };
}

/**
 * The chart selects its pods by name and release (two releases never select each other's pods),
 * the base by name alone: the release label taken out, the selectors must be the same.
 */
function withoutReleaseLabel(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutReleaseLabel);
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(
    Object.entries(value)
      .filter(([key]) => key !== 'app.kubernetes.io/instance')
      .map(([key, child]) => [key, withoutReleaseLabel(child)]),
  );
}

describe('the chart’s default render agrees with kubectl kustomize deploy/', { skip: skipKustomize }, () => {
  const chart = skipKustomize ? [] : releaseObjects(template());
  const kustomize = skipKustomize ? [] : renderKustomize(join(ROOT, 'deploy'));

  for (const kind of ['MutatingWebhookConfiguration', 'ValidatingWebhookConfiguration']) {
    it(`on every field of every webhook of the ${kind}`, () => {
      assert.deepEqual(webhooksOf(chart, kind), webhooksOf(kustomize, kind));
      assert.equal(
        find(chart, kind, 'tolerator').metadata.annotations?.['cert-manager.io/inject-ca-from'],
        find(kustomize, kind, 'tolerator').metadata.annotations?.['cert-manager.io/inject-ca-from'],
      );
    });
  }

  it('on the ClusterRole rules and whom the binding grants them', () => {
    assert.deepEqual(at(find(chart, 'ClusterRole', 'tolerator'), 'rules'), at(find(kustomize, 'ClusterRole', 'tolerator'), 'rules'));
    const binding = (objects: readonly KubeObject[]): unknown =>
      pick(find(objects, 'ClusterRoleBinding', 'tolerator'), ['roleRef', 'subjects']);
    assert.deepEqual(binding(chart), binding(kustomize));
  });

  it('on the Deployment’s server contract: image, args, ports, probes, security contexts, resources, volumes', () => {
    assert.deepEqual(serverContract(chart), serverContract(kustomize));
    const strategy = (objects: readonly KubeObject[]): unknown =>
      pick(find(objects, 'Deployment', 'tolerator'), ['spec.strategy', 'spec.revisionHistoryLimit']);
    assert.deepEqual(strategy(chart), strategy(kustomize));
  });

  it('on the certificates, the Service, the disruption budget, the autoscaler, the network policy and the quota', () => {
    for (const [kind, name, fields] of [
      ['Certificate', 'tolerator-serving', ['spec']],
      ['Certificate', 'tolerator-ca', ['spec']],
      ['Issuer', 'tolerator-ca', ['spec']],
      ['Issuer', 'tolerator-selfsigned', ['spec']],
      ['Service', 'tolerator', ['spec.type', 'spec.ports']],
      ['PodDisruptionBudget', 'tolerator', ['spec.minAvailable', 'spec.unhealthyPodEvictionPolicy']],
      ['HorizontalPodAutoscaler', 'tolerator', ['spec.scaleTargetRef', 'spec.minReplicas', 'spec.maxReplicas', 'spec.metrics']],
      ['NetworkPolicy', 'tolerator', ['spec.policyTypes', 'spec.ingress', 'spec.egress']],
      ['ResourceQuota', 'tolerator-critical-pods', ['spec']],
      ['ConfigMap', 'tolerator-policies', ['data']],
    ] as const) {
      assert.deepEqual(pick(find(chart, kind, name), fields), pick(find(kustomize, kind, name), fields), `${kind}/${name}`);
    }
  });

  it('on the pod’s placement, with the chart’s selector labels in place of the base’s', () => {
    const placement = (objects: readonly KubeObject[]): unknown =>
      pick(at(find(objects, 'Deployment', 'tolerator'), 'spec.template.spec'), ['topologySpreadConstraints', 'affinity']);
    assert.deepEqual(withoutReleaseLabel(placement(chart)), placement(kustomize));
  });

  it('with the Gt/Lt gate on, on the arguments deploy/overlays/comparison-operators gives', () => {
    const overlay = renderKustomize(join(ROOT, 'deploy', 'overlays', 'comparison-operators'));
    assert.deepEqual(serverContract(template(['--set', 'featureGates.TaintTolerationComparisonOperators=true'])), serverContract(overlay));
  });

  it('with clientCA on, on the arguments, mounts and volumes deploy/overlays/client-ca gives', () => {
    const overlay = renderKustomize(join(ROOT, 'deploy', 'overlays', 'client-ca'));
    assert.deepEqual(serverContract(template(['--set', 'clientCA.enabled=true'])), serverContract(overlay));
  });

  it('with audit on, on the arguments, the ClusterRole and the Lease Role deploy/overlays/audit gives', () => {
    const overlay = renderKustomize(join(ROOT, 'deploy', 'overlays', 'audit'));
    const withAudit = template(['--set', 'audit.enabled=true']);
    assert.deepEqual(serverContract(withAudit), serverContract(overlay));
    for (const kind of ['ClusterRole', 'ClusterRoleBinding'] as const) {
      assert.deepEqual(
        withoutReleaseLabel(pick(find(withAudit, kind, 'tolerator-audit'), ['rules', 'roleRef', 'subjects'])),
        pick(find(overlay, kind, 'tolerator-audit'), ['rules', 'roleRef', 'subjects']),
        kind,
      );
    }
    for (const kind of ['Role', 'RoleBinding'] as const) {
      const chartObject = find(withAudit, kind, 'tolerator-audit-lease');
      assert.deepEqual(
        pick(chartObject, ['rules', 'roleRef', 'subjects']),
        pick(find(overlay, kind, 'tolerator-audit-lease'), ['rules', 'roleRef', 'subjects']),
        kind,
      );
      assert.equal(chartObject.metadata.namespace, NAMESPACE, `${kind} in the release's namespace`);
    }
    assert.equal(
      template([]).some((object) => object.metadata.name.startsWith('tolerator-audit')),
      false,
      'off by default',
    );
  });

  it("with events on, on the arguments, the ClusterRole and the webhooks' sideEffects deploy/overlays/events gives; off by default", () => {
    const overlay = renderKustomize(join(ROOT, 'deploy', 'overlays', 'events'));
    const withEvents = template(['--set', 'events.enabled=true']);
    assert.deepEqual(serverContract(withEvents), serverContract(overlay));
    for (const kind of ['ClusterRole', 'ClusterRoleBinding'] as const) {
      assert.deepEqual(
        withoutReleaseLabel(pick(find(withEvents, kind, 'tolerator-events'), ['rules', 'roleRef', 'subjects'])),
        pick(find(overlay, kind, 'tolerator-events'), ['rules', 'roleRef', 'subjects']),
        kind,
      );
    }
    const sideEffects = (objects: readonly KubeObject[]): unknown =>
      ['MutatingWebhookConfiguration', 'ValidatingWebhookConfiguration'].map((kind) =>
        (at(find(objects, kind, 'tolerator'), 'webhooks') as { name: string; sideEffects: string }[]).map((w) => [w.name, w.sideEffects]),
      );
    assert.deepEqual(sideEffects(withEvents), sideEffects(overlay));
    const defaults = template([]);
    assert.equal(
      defaults.some((object) => object.metadata.name.startsWith('tolerator-events')),
      false,
      'no Event RBAC by default',
    );
    assert.equal((at(container(defaults), 'args') as string[]).includes('--emit-events'), false);
  });

  it('refuses an audit interval that is not a duration', () => {
    assert.match(templateError(['--set', 'audit.enabled=true', '--set', 'audit.interval=1d']), /audit\.interval|interval/);
  });

  it('with monitoring on, on the ServiceMonitor, the alerts and the dashboard of deploy/components/monitoring', () => {
    const component = renderKustomize(join(ROOT, 'deploy', 'overlays', 'monitoring'));
    assertSchemaValid(component);
    const withMonitoring = template([
      '--set',
      'metrics.serviceMonitor.enabled=true',
      '--set',
      'metrics.prometheusRule.enabled=true',
      '--set',
      'metrics.dashboard.enabled=true',
    ]);
    for (const [kind, name, fields] of [
      ['ServiceMonitor', 'tolerator', ['spec']],
      ['PrometheusRule', 'tolerator', ['spec']],
      ['ConfigMap', 'tolerator-dashboard', ['metadata.namespace', 'metadata.labels.grafana_dashboard']],
    ] as const) {
      assert.deepEqual(
        withoutReleaseLabel(pick(find(withMonitoring, kind, name), fields)),
        pick(find(component, kind, name), fields),
        `${kind}/${name}`,
      );
    }
    const dashboard = (objects: readonly KubeObject[]): unknown =>
      JSON.parse((at(find(objects, 'ConfigMap', 'tolerator-dashboard'), 'data') as Record<string, string>)['tolerator-dashboard.json']!);
    assert.deepEqual(dashboard(withMonitoring), dashboard(component));
  });

  it('and deploy/ itself renders nothing of the chart or the monitoring component', () => {
    assert.deepEqual(
      kustomize.filter(
        (o) => o.metadata.labels?.['app.kubernetes.io/managed-by'] === 'Helm' || ['ServiceMonitor', 'PrometheusRule'].includes(o.kind),
      ),
      [],
    );
    assert.deepEqual(
      names(kustomize).filter((name) => name !== 'Namespace/tolerator-system'),
      names(chart),
    );
  });
});

describe('helm template: the webhook on Karpenter NodePools', { skip: skipHelm }, () => {
  const nodePoolWebhook = (args: readonly string[]): Record<string, unknown> | undefined =>
    (at(find(template(args), 'ValidatingWebhookConfiguration', 'tolerator'), 'webhooks') as Record<string, unknown>[]).find(
      (webhook) => webhook.name === 'validate-nodepools.tolerator.dev',
    );

  it('renders validate-nodepools.tolerator.dev by default: karpenter.sh/v1 nodepools and nodeclaims, failurePolicy Ignore', () => {
    const webhook = nodePoolWebhook([]);
    assert.ok(webhook);
    assert.equal(webhook.failurePolicy, 'Ignore');
    assert.deepEqual(webhook.rules, [
      {
        apiGroups: ['karpenter.sh'],
        apiVersions: ['v1'],
        resources: ['nodepools', 'nodeclaims'],
        operations: ['CREATE', 'UPDATE'],
        scope: 'Cluster',
      },
    ]);
  });

  it('webhooks.nodePools.failurePolicy and enabled=false are honoured', () => {
    assert.equal(nodePoolWebhook(['--set', 'webhooks.nodePools.failurePolicy=Fail'])?.failurePolicy, 'Fail');
    assert.equal(nodePoolWebhook(['--set', 'webhooks.nodePools.enabled=false']), undefined);
  });
});
