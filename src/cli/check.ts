/**
 * `tolerator check`: verifies an install end to end against a cluster, as `linkerd check` and
 * `cmctl check api` do, one line per check (✓, ✗ with a hint, - when skipped), or `-o json`.
 * Exit code: 0 every check passed, 1 one failed, 2 a usage error or no cluster.
 *
 * The cluster is found as kubectl finds it: `--kubeconfig FILE`, else the files of KUBECONFIG (a
 * list), else ~/.kube/config, else the in-cluster service account; `--context` picks a context.
 * This file gathers what the checks need (I/O); src/audit/install-check.ts decides.
 *
 * The serving certificate is seen as the API server sees it: for a webhook with a `url`, by a TLS
 * connection to that url holding only the caBundle; for one with a `service` (not reachable from
 * outside the cluster), from the Secret the Deployment mounts (`--serving-secret`, deploy/'s
 * tolerator-tls), checked against the caBundle for the name NAME.NAMESPACE.svc the API server dials.
 * tolerator's own /metrics (its feature gates, its policies) is read through the url, or through
 * the API server's service proxy.
 *
 * Every request goes through the one request helper (src/kube/api-requests.ts: bounded in time
 * and size, the wire shape parsed once), and the policies of the ConfigMap through the server's
 * own parser (policySetFromSources), so that check refuses what `serve` refuses. With policies,
 * the Nodes and Karpenter NodePools are judged for the node half of the pattern
 * (src/tenancy/node-side.ts), and the RuntimeClasses for scheduling that reaches a group's nodes
 * (src/tenancy/runtime-classes.ts, as the audit's runtimeclass-pattern), page by page.
 */
import { X509Certificate } from 'node:crypto';
import { isIP } from 'node:net';
import { checkServerIdentity, connect as tlsConnect } from 'node:tls';
import type { KubeConfig } from '@kubernetes/client-node';
import {
  checkExitCode,
  countEndpoints,
  defaultsCheck,
  endpointsCheck,
  excludedNamespaceCheck,
  featureGatesCheck,
  formatCheckLines,
  gateSamples,
  gaugeValue,
  nodePatternCheck,
  policiesCheck,
  servingCertificateCheck,
  tenancyCheck,
  webhookConfigurationCheck,
  type CheckResult,
  type DryRunAnswer,
  type ObservedCertificate,
  type ObservedEndpoints,
  type ObservedWebhook,
} from '../audit/install-check.js';
import type { Node } from '../api/types.js';
import { isJsonObject } from '../api/types.js';
import { createApiRequest, describeFailure, ResponseTooLarge, type ApiRequest } from '../kube/api-requests.js';
import { nodeFindings, nodePoolFindings } from '../tenancy/node-side.js';
import { runtimeClassFindings } from '../tenancy/runtime-classes.js';
import { policySetFromSources } from '../tenancy/policy-directory.js';
import { formatPolicyLoadError, type TenancyPolicy } from '../tenancy/policy.js';
import type { CommandDefinition, CommandIo } from './command.js';
import { UsageError, type FlagSpec, type ParsedFlags } from './flags.js';

export const checkFlags = {
  kubeconfig: { kind: 'string', placeholder: 'FILE', help: 'the cluster (default: KUBECONFIG, else ~/.kube/config, else in-cluster)' },
  context: { kind: 'string', placeholder: 'NAME', help: 'the kubeconfig context to use (default: its current-context)' },
  'mutating-webhook': { kind: 'string', placeholder: 'NAME', help: 'the MutatingWebhookConfiguration (default tolerator)' },
  'validating-webhook': { kind: 'string', placeholder: 'NAME', help: 'the ValidatingWebhookConfiguration (default tolerator)' },
  'install-namespace': {
    kind: 'string',
    placeholder: 'NS',
    help: "tolerator's namespace, of its ConfigMap and Secret (default tolerator-system)",
  },
  'policies-configmap': { kind: 'string', placeholder: 'NAME', help: 'the ConfigMap of tenancy policies (default tolerator-policies)' },
  'serving-secret': {
    kind: 'string',
    placeholder: 'NAME',
    help: 'the Secret of the serving certificate, for a webhook with a service (default tolerator-tls)',
  },
  namespace: { kind: 'string', placeholder: 'NS', help: 'a reviewed namespace for the dry-run pods (default default)' },
  'excluded-namespace': { kind: 'string', placeholder: 'NS', help: 'a namespace the webhooks exclude (default kube-system)' },
  output: { kind: 'string', placeholder: 'FORMAT', short: 'o', help: 'output format (default text)', choices: ['text', 'json'] },
} as const satisfies Record<string, FlagSpec>;

/** 10 s per network step: an answer later than that is a failure worth reporting, not waiting on. */
const stepTimeoutMs = 10_000;
/** The API server's /metrics is a few MiB; 64 MiB bounds a hostile or broken one (as serve's read). */
const maxMetricsBytes = 64 * 1024 * 1024;
/**
 * 3 MiB: the largest object kube-apiserver accepts (its default --max-request-bytes), so the
 * largest one it sends back; a webhook configuration, Secret or ConfigMap read whole.
 */
const maxObjectBytes = 3 * 1024 * 1024;
/** Nodes and NodePools per page: client-go's pager default. */
const listPageSize = 500;

export const checkCommand: CommandDefinition = {
  name: 'check',
  summary: 'verifies an install on a cluster end to end: webhooks, endpoints, certificate, defaults, tenancy, exclusions, gates, policies',
  flags: checkFlags,
  outcomes: { ok: 'every check passed', found: 'a check failed (its line says which and why)' },
  run: runCheck,
};

async function runCheck(flags: ParsedFlags, io: CommandIo): Promise<number> {
  const str = (name: keyof typeof checkFlags, fallback: string): string => (flags.values.get(name) as string | undefined) ?? fallback;
  const output = str('output', 'text');
  const { loadKubeConfig } = await import('../kube/kube-config.js');
  let kc: KubeConfig | undefined;
  try {
    kc = loadKubeConfig({
      kubeconfigPath: flags.values.get('kubeconfig') as string | undefined,
      context: flags.values.get('context') as string | undefined,
      env: io.env ?? {},
      discover: { homeDir: io.homeDir },
    });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  if (kc === undefined) {
    throw new UsageError(
      'no cluster: give --kubeconfig FILE, set KUBECONFIG, write ~/.kube/config, or run in a pod with a service account',
    );
  }
  const results = await runChecks(kc, {
    mutating: str('mutating-webhook', 'tolerator'),
    validating: str('validating-webhook', 'tolerator'),
    installNamespace: str('install-namespace', 'tolerator-system'),
    policiesConfigMap: str('policies-configmap', 'tolerator-policies'),
    servingSecret: str('serving-secret', 'tolerator-tls'),
    namespace: str('namespace', 'default'),
    excludedNamespace: str('excluded-namespace', 'kube-system'),
  });
  io.stdout(
    output === 'json' ? `${JSON.stringify({ checks: results, ok: checkExitCode(results) === 0 }, null, 2)}\n` : formatCheckLines(results),
  );
  return checkExitCode(results);
}

interface CheckTargets {
  readonly mutating: string;
  readonly validating: string;
  readonly installNamespace: string;
  readonly policiesConfigMap: string;
  readonly servingSecret: string;
  readonly namespace: string;
  readonly excludedNamespace: string;
}

async function runChecks(kc: KubeConfig, targets: CheckTargets): Promise<CheckResult[]> {
  const api = createApiRequest(kc, { timeoutMs: stepTimeoutMs });
  const results: CheckResult[] = [];
  const reachable: ObservedWebhook[] = [];

  for (const [kind, resource, name] of [
    ['MutatingWebhookConfiguration', 'mutatingwebhookconfigurations', targets.mutating],
    ['ValidatingWebhookConfiguration', 'validatingwebhookconfigurations', targets.validating],
  ] as const) {
    const read = await readObject(api, `/apis/admissionregistration.k8s.io/v1/${resource}/${encodeURIComponent(name)}`);
    if (typeof read === 'string') {
      results.push({ id: 'webhook-configuration', ok: false, message: `${kind} ${name} could not be read: ${read}` });
      continue;
    }
    const webhooks = read === undefined ? undefined : listAt(read, 'webhooks').map(observedWebhook);
    results.push(webhookConfigurationCheck(kind, name, webhooks));
    for (const webhook of webhooks ?? []) {
      results.push(endpointsCheck(kind, webhook, webhook.service === undefined ? undefined : await endpointsOf(api, webhook.service)));
      if (webhook.service === undefined && webhook.url === undefined) continue;
      results.push(servingCertificateCheck(kind, webhook, await certificateOf(api, webhook, targets), new Date()));
      reachable.push(webhook);
    }
  }

  const probePod = (namespace: string, tolerations: readonly Record<string, string>[] = []): Promise<DryRunAnswer> =>
    dryRunPod(api, namespace, tolerations);
  results.push(defaultsCheck(targets.namespace, await probePod(targets.namespace)));
  results.push(excludedNamespaceCheck(targets.excludedNamespace, await probePod(targets.excludedNamespace)));

  const configMap = await policiesInConfigMap(api, targets);
  const policies = typeof configMap === 'string' ? [] : configMap.policies;
  const deny = policies.find((policy) => policy.enforcement === 'Deny');
  const foreignGroup = 'tolerator-check-foreign-group';
  results.push(
    tenancyCheck(
      deny === undefined ? undefined : { namespace: targets.namespace, group: foreignGroup, policy: deny.name },
      deny === undefined
        ? undefined
        : await probePod(targets.namespace, [{ key: deny.taint.key, operator: 'Equal', value: foreignGroup, effect: deny.taint.effect }]),
    ),
  );

  const [first] = reachable;
  const toleratorMetrics = first === undefined ? 'no webhook to reach tolerator through' : await toleratorMetricsText(api, first);
  const apiServerMetrics = await getText(api, '/metrics');
  results.push(
    featureGatesCheck(
      typeof toleratorMetrics === 'string' ? toleratorMetrics : gateSamples(toleratorMetrics.body, 'tolerator_feature_gate_enabled'),
      typeof apiServerMetrics === 'string' ? apiServerMetrics : gateSamples(apiServerMetrics.body, 'kubernetes_feature_enabled'),
    ),
  );
  const loaded =
    typeof toleratorMetrics === 'string'
      ? toleratorMetrics
      : (gaugeValue(toleratorMetrics.body, 'tolerator_policies_loaded') ?? 'no tolerator_policies_loaded sample');
  results.push(
    policiesCheck(
      typeof configMap === 'string'
        ? configMap
        : { name: `${targets.installNamespace}/${targets.policiesConfigMap}`, policies: configMap.documents, errors: configMap.errors },
      loaded,
    ),
  );

  // The node half of the pattern: what the policies of the ConfigMap say of the Nodes and
  // NodePools there are, and of the RuntimeClasses, whose scheduling is merged into every pod that
  // names one before the webhooks run (one that tolerates a group's taint hands that toleration
  // to a tenant of another group). Each judged by the audit's own function for its rule.
  const nodeSide = [
    ['Node', '/api/v1/nodes', (judged: readonly TenancyPolicy[]) => (node: unknown) => nodeFindings(node as Node, judged)],
    [
      'NodePool',
      '/apis/karpenter.sh/v1/nodepools',
      (judged: readonly TenancyPolicy[]) => (pool: unknown) => nodePoolFindings(pool, judged),
    ],
    [
      'RuntimeClass',
      '/apis/node.k8s.io/v1/runtimeclasses',
      (judged: readonly TenancyPolicy[]) => (runtimeClass: unknown) => runtimeClassFindings(runtimeClass, judged),
    ],
  ] as const;
  for (const [kind, path, judgeWith] of nodeSide) {
    const observed = policies.length === 0 ? { count: 0, findings: [] } : await judgeList(api, path, judgeWith(policies));
    results.push(nodePatternCheck(kind, observed, policies.length));
  }
  return results;
}

/** An object read whole: its body, undefined on 404, the reason on any other failure. */
async function readObject(api: ApiRequest, path: string): Promise<Record<string, unknown> | undefined | string> {
  try {
    const response = await api('GET', path, undefined, { maxBodyBytes: maxObjectBytes });
    if (response.status === 404) return undefined;
    if (response.status !== 200 || !isJsonObject(response.body)) return describeFailure(response);
    return response.body;
  } catch (error) {
    return describe(error);
  }
}

/** The array at `field` of an object from the wire, [] when absent or null (as Go's encoder writes an empty slice). */
function listAt(object: Record<string, unknown>, field: string): unknown[] {
  const value = object[field];
  return Array.isArray(value) ? (value as unknown[]) : [];
}

/**
 * Every item of a cluster-scoped list, in pages, judged as it arrives and then dropped (a cluster
 * of thousands of Nodes is never held): how many there were and each finding's message;
 * undefined when the API is not served (404), the reason when a page cannot be read.
 */
async function judgeList(
  api: ApiRequest,
  path: string,
  judge: (item: unknown) => readonly { readonly message: string }[],
): Promise<{ count: number; findings: string[] } | string | undefined> {
  let count = 0;
  const findings: string[] = [];
  let token = '';
  do {
    const query = `?limit=${listPageSize}${token === '' ? '' : `&continue=${encodeURIComponent(token)}`}`;
    let response;
    try {
      response = await api('GET', `${path}${query}`, undefined, {
        onItem: (item) => {
          count++;
          for (const finding of judge(item)) findings.push(finding.message);
        },
      });
    } catch (error) {
      return describe(error);
    }
    if (response.status === 404) return undefined;
    if (response.status !== 200 || !isJsonObject(response.body)) return describeFailure(response);
    const metadata = response.body.metadata;
    token = isJsonObject(metadata) && typeof metadata.continue === 'string' ? metadata.continue : '';
  } while (token !== '');
  return { count, findings };
}

/** One webhook of a configuration as the API server sends it (any JSON: each field is checked before use). */
function observedWebhook(webhook: unknown): ObservedWebhook {
  const hook = isJsonObject(webhook) ? webhook : {};
  const config = isJsonObject(hook.clientConfig) ? hook.clientConfig : {};
  const caBundle = typeof config.caBundle === 'string' ? Buffer.from(config.caBundle, 'base64').toString('utf8') : '';
  const service = isJsonObject(config.service) ? config.service : undefined;
  return {
    name: typeof hook.name === 'string' ? hook.name : '',
    caBundle,
    ...(typeof config.url === 'string' ? { url: config.url } : {}),
    // 443: the API's default port for a webhook Service.
    ...(service === undefined
      ? {}
      : {
          service: {
            namespace: typeof service.namespace === 'string' ? service.namespace : '',
            name: typeof service.name === 'string' ? service.name : '',
            port: typeof service.port === 'number' ? service.port : 443,
            ...(typeof service.path === 'string' ? { path: service.path } : {}),
          },
        }),
  };
}

function describe(error: unknown): string {
  if (error instanceof ResponseTooLarge) return error.message;
  return error instanceof Error ? error.message : String(error);
}

async function endpointsOf(api: ApiRequest, service: NonNullable<ObservedWebhook['service']>): Promise<ObservedEndpoints | undefined> {
  const namespace = encodeURIComponent(service.namespace);
  const exists = await readObject(api, `/api/v1/namespaces/${namespace}/services/${encodeURIComponent(service.name)}`);
  if (exists === undefined) return undefined;
  const selector = encodeURIComponent(`kubernetes.io/service-name=${service.name}`);
  const slices = await readObject(api, `/apis/discovery.k8s.io/v1/namespaces/${namespace}/endpointslices?labelSelector=${selector}`);
  // A Service whose slices cannot be read has, as far as anyone can tell, no endpoint to call.
  return typeof slices === 'object' ? countEndpoints(listAt(slices, 'items')) : { ready: 0, notReady: 0 };
}

function pemBlocks(text: string): string[] {
  return text.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
}

async function certificateOf(api: ApiRequest, webhook: ObservedWebhook, targets: CheckTargets): Promise<ObservedCertificate> {
  const service = webhook.service;
  if (service === undefined) return tlsObservation(new URL(webhook.url ?? ''), webhook.caBundle);
  const secret = await readObject(
    api,
    `/api/v1/namespaces/${encodeURIComponent(service.namespace)}/secrets/${encodeURIComponent(targets.servingSecret)}`,
  );
  if (secret === undefined || typeof secret === 'string') {
    return {
      reached: false,
      error: `Secret ${service.namespace}/${targets.servingSecret}: ${secret ?? 'not found'} (name the mounted one with --serving-secret)`,
    };
  }
  const data = isJsonObject(secret.data) ? secret.data : {};
  const tlsCrt = data['tls.crt'];
  if (typeof tlsCrt !== 'string') return { reached: false, error: `Secret ${service.namespace}/${targets.servingSecret} has no tls.crt` };
  try {
    const leaf = new X509Certificate(pemBlocks(Buffer.from(tlsCrt, 'base64').toString('utf8'))[0] ?? '');
    const host = `${service.name}.${service.namespace}.svc`;
    const notAfter = new Date(leaf.validTo);
    const verified = pemBlocks(webhook.caBundle).some((pem) => {
      const ca = new X509Certificate(pem);
      return leaf.checkIssued(ca) && leaf.verify(ca.publicKey);
    });
    return {
      reached: true,
      verified,
      ...(verified ? {} : { verifyError: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE' }),
      hostMatches: leaf.checkHost(host) !== undefined,
      host,
      notAfter,
    };
  } catch (error) {
    return {
      reached: false,
      error: `Secret ${service.namespace}/${targets.servingSecret}: tls.crt is not a certificate: ${(error as Error).message}`,
    };
  }
}

/** A TLS handshake with the url holding only the caBundle, as the API server's client does. */
function tlsObservation(url: URL, caBundle: string): Promise<ObservedCertificate> {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const port = url.port === '' ? 443 : Number(url.port);
  return new Promise((resolve) => {
    const socket = tlsConnect({
      host,
      port,
      ...(isIP(host) === 0 ? { servername: host } : {}),
      ...(caBundle === '' ? {} : { ca: caBundle }),
      // Verified below, so an unverified or expired certificate is still seen and described.
      rejectUnauthorized: false,
      timeout: stepTimeoutMs,
    });
    socket.once('secureConnect', () => {
      const certificate = socket.getPeerCertificate();
      // A string code (CERT_HAS_EXPIRED) at run time, though typed as an Error (node's _tls_wrap.js).
      const rawError: unknown = socket.authorizationError;
      const verifyError =
        typeof rawError === 'string'
          ? rawError
          : rawError instanceof Error
            ? ((rawError as NodeJS.ErrnoException).code ?? rawError.message)
            : undefined;
      resolve({
        reached: true,
        verified: socket.authorized,
        ...(verifyError === undefined ? {} : { verifyError }),
        hostMatches: checkServerIdentity(host, certificate) === undefined,
        host,
        notAfter: new Date(certificate.valid_to),
      });
      socket.destroy();
    });
    socket.once('timeout', () => {
      socket.destroy();
      resolve({ reached: false, error: `no TLS handshake with ${url.host} within ${stepTimeoutMs / 1000} s` });
    });
    socket.once('error', (error: Error) => {
      resolve({ reached: false, error: `${url.host}: ${error.message}` });
    });
  });
}

const probeContainer = { name: 'check', image: 'registry.k8s.io/pause:3.10', resources: { requests: { cpu: '1m' } } };

/** A dry-run create (nothing is stored) of a Burstable pod with `tolerations`: what the API server answers, as it answers it. */
async function dryRunPod(api: ApiRequest, namespace: string, tolerations: readonly Record<string, string>[]): Promise<DryRunAnswer> {
  const pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { generateName: 'tolerator-check-', labels: { 'app.kubernetes.io/created-by': 'tolerator-check' } },
    spec: { containers: [probeContainer], tolerations },
  };
  let answer;
  try {
    answer = await api('POST', `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods?dryRun=All`, pod, {
      maxBodyBytes: maxObjectBytes,
    });
  } catch (error) {
    return { created: false, code: 0, message: describe(error) };
  }
  const body = answer.body as { spec?: { tolerations?: { key?: unknown; effect?: unknown }[] }; message?: unknown } | undefined;
  if (answer.status !== 201 && answer.status !== 200) {
    return { created: false, code: answer.status, message: typeof body?.message === 'string' ? body.message : '' };
  }
  const stored = Array.isArray(body?.spec?.tolerations) ? body.spec.tolerations : [];
  return {
    created: true,
    tolerations: stored.map((t) => ({
      ...(typeof t.key === 'string' ? { key: t.key } : {}),
      ...(typeof t.effect === 'string' ? { effect: t.effect } : {}),
    })),
  };
}

/**
 * The ConfigMap's policies, read by the server's own parser (policySetFromSources): the files it
 * would mount, by the directory's rule (src/tenancy/policy-directory.ts, names ending in .yaml,
 * .yml or .json), in name order. A document the server refuses (`kind: TenancyPolcy`) is an error
 * here too, not a document skipped.
 */
async function policiesInConfigMap(
  api: ApiRequest,
  targets: CheckTargets,
): Promise<{ documents: number; policies: readonly TenancyPolicy[]; errors: string[] } | string> {
  const name = `${targets.installNamespace}/${targets.policiesConfigMap}`;
  const configMap = await readObject(
    api,
    `/api/v1/namespaces/${encodeURIComponent(targets.installNamespace)}/configmaps/${encodeURIComponent(targets.policiesConfigMap)}`,
  );
  if (configMap === undefined) return `ConfigMap ${name} not found (name it with --policies-configmap)`;
  if (typeof configMap === 'string') return `ConfigMap ${name} could not be read: ${configMap}`;
  const data = isJsonObject(configMap.data) ? configMap.data : {};
  const sources = Object.entries(data)
    .filter((entry): entry is [string, string] => policyFileName.test(entry[0]) && typeof entry[1] === 'string')
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([file, text]) => ({ file, text }));
  const loaded = policySetFromSources(sources);
  return {
    documents: loaded.set.policies.length + loaded.errors.length,
    policies: loaded.set.policies,
    errors: loaded.errors.map(formatPolicyLoadError),
  };
}

/** The directory's rule for policy files (src/tenancy/policy-directory.ts): a ConfigMap key is a file name. */
const policyFileName = /\.(ya?ml|json)$/;

/** tolerator's /metrics: through the webhook's url (trusting only its caBundle), or the API server's proxy to its Service. */
async function toleratorMetricsText(api: ApiRequest, webhook: ObservedWebhook): Promise<{ body: string } | string> {
  const service = webhook.service;
  if (service === undefined) {
    let direct: ApiRequest;
    try {
      direct = await urlRequest(new URL(webhook.url ?? ''), webhook.caBundle);
    } catch (error) {
      return describe(error);
    }
    return getText(direct, '/metrics');
  }
  return getText(
    api,
    `/api/v1/namespaces/${encodeURIComponent(service.namespace)}/services/https:${encodeURIComponent(service.name)}:${service.port}/proxy/metrics`,
  );
}

/**
 * Requests to a webhook's url as the API server makes them: trusting its caBundle alone (the
 * system's CAs when it is empty), with no credentials. The same request helper, given a
 * kubeconfig of one cluster and no user.
 */
async function urlRequest(url: URL, caBundle: string): Promise<ApiRequest> {
  const { KubeConfig: KubeConfigClass } = await import('@kubernetes/client-node');
  const direct = new KubeConfigClass();
  direct.loadFromOptions({
    clusters: [
      {
        name: 'webhook',
        server: url.origin,
        skipTLSVerify: false,
        ...(caBundle === '' ? {} : { caData: Buffer.from(caBundle).toString('base64') }),
      },
    ],
    users: [{ name: 'anonymous' }],
    contexts: [{ name: 'webhook', cluster: 'webhook', user: 'anonymous' }],
    currentContext: 'webhook',
  });
  return createApiRequest(direct, { timeoutMs: stepTimeoutMs });
}

/** A text GET (an exposition), bounded in time and size: the body, or why not. */
async function getText(api: ApiRequest, path: string): Promise<{ body: string } | string> {
  try {
    const response = await api('GET', path, undefined, { maxBodyBytes: maxMetricsBytes, text: true });
    if (response.status !== 200) {
      return `GET ${path}: HTTP ${response.status}: ${typeof response.body === 'string' ? response.body.slice(0, 200) : ''}`;
    }
    return { body: typeof response.body === 'string' ? response.body : '' };
  } catch (error) {
    return `GET ${path}: ${describe(error)}`;
  }
}
