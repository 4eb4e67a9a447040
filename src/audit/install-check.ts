/**
 * `tolerator check`'s decisions: given what the edge (src/cli/check.ts) observed of an install —
 * the webhook configurations, the Service's endpoints, the serving certificate as a TLS client
 * holding the `caBundle` saw it, the answers to dry-run pods, both sides' feature gates and
 * policies, the nodes and NodePools — one line per check, passed or failed, with what to do about
 * a failure. Pure: no clock (the edge passes `now`), no I/O.
 */
import { clipText, spellOut } from '../api/text-bounds.js';

export interface CheckResult {
  /** A stable identifier, for `-o json` consumers. */
  readonly id: string;
  readonly ok: boolean;
  /** What was checked and found, in words. */
  readonly message: string;
  /** For a failure: what to look at or run. */
  readonly hint?: string;
  /** A check that could not run (what it needs is absent); counts neither way. */
  readonly skipped?: boolean;
}

export type WebhookKind = 'MutatingWebhookConfiguration' | 'ValidatingWebhookConfiguration';

/** The part of one webhook of a configuration the checks read. */
export interface ObservedWebhook {
  readonly name: string;
  readonly service?: { readonly namespace: string; readonly name: string; readonly port: number; readonly path?: string };
  readonly url?: string;
  /** Decoded PEM, '' when the field is empty. */
  readonly caBundle: string;
}

export function webhookConfigurationCheck(kind: WebhookKind, name: string, webhooks: readonly ObservedWebhook[] | undefined): CheckResult {
  const id = kind === 'MutatingWebhookConfiguration' ? 'mutating-webhook-configuration' : 'validating-webhook-configuration';
  if (webhooks === undefined) {
    return {
      id,
      ok: false,
      message: `${kind} ${name} not found`,
      hint: `install it (kubectl apply -k deploy/ or the Helm chart), or name the installed one with --${kind === 'MutatingWebhookConfiguration' ? 'mutating' : 'validating'}-webhook`,
    };
  }
  if (webhooks.length === 0) return { id, ok: false, message: `${kind} ${name} has no webhooks`, hint: 'reinstall it from deploy/' };
  const unaddressed = webhooks.filter((webhook) => webhook.service === undefined && webhook.url === undefined);
  if (unaddressed.length > 0) {
    return { id, ok: false, message: `${kind} ${name}: ${unaddressed.map((w) => w.name).join(', ')} has neither a service nor a url` };
  }
  return {
    id,
    ok: true,
    message: `${kind} ${name} exists (${webhooks.map((webhook) => `${webhook.name} → ${target(webhook)}`).join(', ')})`,
  };
}

function target(webhook: ObservedWebhook): string {
  const service = webhook.service;
  if (service === undefined) return webhook.url ?? '';
  return `service ${service.namespace}/${service.name}:${service.port}${service.path ?? ''}`;
}

/** The Service's endpoints as EndpointSlices report them; undefined when the Service does not exist. */
export interface ObservedEndpoints {
  readonly ready: number;
  readonly notReady: number;
}

/**
 * The endpoints of a Service's EndpointSlices (discovery.k8s.io/v1, the wire shape). `endpoints`
 * is optional and a real API server sends `null` for a slice with no endpoint, as the
 * EndpointSlice controller writes it while no pod is ready (`slice.endpoints is not iterable` was
 * check's crash on exactly that); an endpoint whose ready condition is unknown (absent) counts as
 * ready, as discovery/v1 documents.
 */
export function countEndpoints(slices: readonly unknown[]): ObservedEndpoints {
  let ready = 0;
  let notReady = 0;
  for (const slice of slices) {
    const endpoints = typeof slice === 'object' && slice !== null ? (slice as { endpoints?: unknown }).endpoints : undefined;
    if (!Array.isArray(endpoints)) continue;
    for (const endpoint of endpoints as unknown[]) {
      const conditions = typeof endpoint === 'object' && endpoint !== null ? (endpoint as { conditions?: unknown }).conditions : undefined;
      const isReady = typeof conditions === 'object' && conditions !== null ? (conditions as { ready?: unknown }).ready : undefined;
      if (isReady === false) notReady++;
      else ready++;
    }
  }
  return { ready, notReady };
}

export function endpointsCheck(kind: WebhookKind, webhook: ObservedWebhook, endpoints: ObservedEndpoints | undefined): CheckResult {
  const id = `${kind === 'MutatingWebhookConfiguration' ? 'mutating' : 'validating'}-endpoints`;
  if (webhook.service === undefined) {
    return {
      id,
      ok: true,
      message: `${webhook.name} calls a url (${webhook.url ?? ''}): no Service to check; the TLS check below reaches it`,
    };
  }
  const service = `${webhook.service.namespace}/${webhook.service.name}`;
  if (endpoints === undefined) {
    return {
      id,
      ok: false,
      message: `${webhook.name}: Service ${service} not found`,
      hint: `kubectl -n ${webhook.service.namespace} get service ${webhook.service.name}`,
    };
  }
  if (endpoints.ready === 0) {
    return {
      id,
      ok: false,
      message: `${webhook.name}: Service ${service} has no ready endpoints (${endpoints.notReady} not ready)`,
      hint: `kubectl -n ${webhook.service.namespace} get pods,endpointslices -l app.kubernetes.io/name=tolerator; the pods' /readyz says why they are not ready`,
    };
  }
  return {
    id,
    ok: true,
    message: `${webhook.name}: Service ${service} has ${endpoints.ready} ready endpoint${endpoints.ready === 1 ? '' : 's'}`,
  };
}

/** What a TLS client holding the webhook's caBundle saw of the serving certificate. */
export type ObservedCertificate =
  | { readonly reached: false; readonly error: string }
  | {
      readonly reached: true;
      /** The chain verified against the caBundle alone (Node's `authorized`). */
      readonly verified: boolean;
      /** Node's authorizationError, e.g. CERT_HAS_EXPIRED, UNABLE_TO_VERIFY_LEAF_SIGNATURE. */
      readonly verifyError?: string;
      /** The name the API server checks (the url's host, or NAME.NAMESPACE.svc) is in the certificate. */
      readonly hostMatches: boolean;
      readonly host: string;
      readonly notAfter: Date;
    };

const dayMs = 86_400_000;

/**
 * ✓ when the caBundle verifies the certificate for the host the API server dials and it has not
 * expired; the message says how long it has left. A certificate with under 7 days left fails:
 * cert-manager renews at two thirds of the 90-day lifetime deploy/ sets (30 days before), so 7
 * days left means renewal has been failing for over three weeks.
 */
export function servingCertificateCheck(kind: WebhookKind, webhook: ObservedWebhook, seen: ObservedCertificate, now: Date): CheckResult {
  const id = `${kind === 'MutatingWebhookConfiguration' ? 'mutating' : 'validating'}-serving-certificate`;
  if (webhook.caBundle === '') {
    return {
      id,
      ok: false,
      message: `${webhook.name} has an empty caBundle`,
      hint: "cert-manager's cainjector fills it: check the annotation cert-manager.io/inject-ca-from and the Certificate",
    };
  }
  if (!seen.reached) return { id, ok: false, message: `${webhook.name}: could not reach the serving certificate: ${seen.error}` };
  const left = seen.notAfter.getTime() - now.getTime();
  if (left <= 0 || seen.verifyError === 'CERT_HAS_EXPIRED') {
    return {
      id,
      ok: false,
      message: `${webhook.name}: the serving certificate expired at ${seen.notAfter.toISOString()}`,
      hint: 'the API server refuses to call it (the validating webhook fails closed): renew it (cmctl renew -n tolerator-system tolerator-serving) and check cert-manager',
    };
  }
  if (!seen.verified) {
    return {
      id,
      ok: false,
      message: `${webhook.name}: its caBundle does not verify the serving certificate (${seen.verifyError ?? 'not authorized'})`,
      hint: 'the caBundle is not the CA that signed the certificate tolerator serves: let cainjector rewrite it, or put that CA in clientConfig.caBundle',
    };
  }
  if (!seen.hostMatches) {
    return {
      id,
      ok: false,
      message: `${webhook.name}: the serving certificate is not for ${seen.host}`,
      hint: `the API server checks that name; add it to the certificate's dnsNames or ipAddresses`,
    };
  }
  const days = Math.floor(left / dayMs);
  const message = `${webhook.name}: the caBundle verifies the serving certificate for ${seen.host}; it expires in ${days} day${days === 1 ? '' : 's'} (${seen.notAfter.toISOString()})`;
  if (left < 7 * dayMs)
    return { id, ok: false, message, hint: 'renewal is overdue: check cert-manager (kubectl describe certificate -n tolerator-system)' };
  return { id, ok: true, message };
}

/** One dry-run pod create: what the API server stored, or its refusal. */
export type DryRunAnswer =
  | {
      readonly created: true;
      readonly tolerations: readonly { readonly key?: string; readonly effect?: string; readonly operator?: string }[];
    }
  | { readonly created: false; readonly code: number; readonly message: string };

const memoryPressureKey = 'node.kubernetes.io/memory-pressure';

/**
 * The probe is a Burstable pod: tolerator's PodTolerationRestriction adds the memory-pressure
 * toleration to it, which the API server's own plugins do not add unless the in-tree
 * PodTolerationRestriction is enabled (off by default; AKS enables it, where this check cannot
 * tell the two apart, and says so).
 */
function reviewed(answer: DryRunAnswer & { created: true }): boolean {
  return answer.tolerations.some((toleration) => toleration.key === memoryPressureKey && toleration.effect === 'NoSchedule');
}

export function defaultsCheck(namespace: string, answer: DryRunAnswer): CheckResult {
  const id = 'defaults';
  if (!answer.created) {
    return {
      id,
      ok: false,
      message: `a dry-run pod in ${namespace} was refused: HTTP ${answer.code}: ${answer.message}`,
      hint: "a pod with no tolerations should be admitted: see tolerator's log",
    };
  }
  if (!reviewed(answer)) {
    return {
      id,
      ok: false,
      message: `a dry-run Burstable pod in ${namespace} came back without the memory-pressure toleration: tolerator did not mutate it`,
      hint: `check the mutating webhook's namespaceSelector (is ${namespace} excluded?) and the API server's log for calls to it (the mutating webhook fails open)`,
    };
  }
  return {
    id,
    ok: true,
    message: `a dry-run pod in ${namespace} came back with the defaults (${answer.tolerations.map((t) => t.key ?? '').join(', ')})`,
  };
}

export function excludedNamespaceCheck(namespace: string, answer: DryRunAnswer): CheckResult {
  const id = 'excluded-namespace';
  if (!answer.created) {
    return {
      id,
      ok: false,
      message: `a dry-run pod in the excluded namespace ${namespace} was refused: HTTP ${answer.code}: ${answer.message}`,
    };
  }
  if (reviewed(answer)) {
    return {
      id,
      ok: false,
      message: `a dry-run pod in ${namespace}, which the webhooks exclude, came back with the memory-pressure toleration: it was reviewed`,
      hint: "check the webhooks' namespaceSelector; or the API server enables the in-tree PodTolerationRestriction (as AKS does), which adds it too",
    };
  }
  return { id, ok: true, message: `a dry-run pod in ${namespace} (excluded) was not reviewed` };
}

export function tenancyCheck(
  probe: { namespace: string; group: string; policy: string } | undefined,
  answer: DryRunAnswer | undefined,
): CheckResult {
  const id = 'tenancy';
  if (probe === undefined || answer === undefined) {
    return {
      id,
      ok: true,
      skipped: true,
      message: 'no TenancyPolicy with enforcement Deny in the ConfigMap: no foreign-group pod to refuse',
    };
  }
  if (answer.created) {
    return {
      id,
      ok: false,
      message: `a dry-run pod in ${probe.namespace} tolerating group ${probe.group}'s taint (policy ${probe.policy}) was admitted`,
      hint: 'the validating webhook did not refuse it: is the policy loaded (next check), is the checking user exempt, is the namespace excluded?',
    };
  }
  return {
    id,
    ok: true,
    message: `a dry-run pod in ${probe.namespace} tolerating group ${probe.group}'s taint was refused (HTTP ${answer.code})`,
  };
}

export type GateSamples = ReadonlyMap<string, boolean>;

/** Each gate tolerator reports (`tolerator_feature_gate_enabled`) against the API server's `kubernetes_feature_enabled`. */
export function featureGatesCheck(tolerator: GateSamples | string, apiServer: GateSamples | string): CheckResult {
  const id = 'feature-gates';
  if (typeof tolerator === 'string') return { id, ok: false, message: `tolerator's gates could not be read: ${tolerator}` };
  if (typeof apiServer === 'string')
    return { id, ok: false, message: `the API server's gates could not be read: ${apiServer}`, hint: 'GET /metrics needs that grant' };
  const differ: string[] = [];
  for (const [name, enabled] of [...tolerator].sort(([a], [b]) => (a < b ? -1 : 1))) {
    const theirs = apiServer.get(name) ?? false;
    if (theirs !== enabled) differ.push(`${name}: tolerator ${enabled ? 'on' : 'off'}, API server ${theirs ? 'on' : 'off'}`);
  }
  if (tolerator.size === 0) return { id, ok: false, message: 'tolerator reported no feature gates' };
  if (differ.length > 0) {
    return {
      id,
      ok: false,
      message: `feature gates differ: ${differ.join('; ')}`,
      hint: 'a --feature-gates flag (featureGates in the chart) overrides the cluster; remove it or make it match',
    };
  }
  return { id, ok: true, message: `tolerator's ${tolerator.size} feature gates agree with the API server's` };
}

export function policiesCheck(
  configMap: { readonly name: string; readonly policies: number; readonly errors?: readonly string[] } | string,
  loaded: number | string,
): CheckResult {
  const id = 'policies';
  if (typeof configMap === 'string') return { id, ok: false, message: configMap };
  const errors = configMap.errors ?? [];
  if (errors.length > 0) {
    // The server's own parser (src/tenancy/policy-directory.ts) refused them: it would not start
    // with them, or keeps its last good set serving.
    return {
      id,
      ok: false,
      message: `ConfigMap ${configMap.name} holds what tolerator refuses: ${spellOut(errors, (error) => clipText(error), '; ', 'errors')}`,
      hint: 'fix the ConfigMap: `tolerator test --policies DIR` with its files shows the same errors',
    };
  }
  if (typeof loaded === 'string') return { id, ok: false, message: `tolerator's loaded policies could not be read: ${loaded}` };
  if (configMap.policies !== loaded) {
    return {
      id,
      ok: false,
      message: `ConfigMap ${configMap.name} holds ${configMap.policies} TenancyPolicy documents, tolerator serves ${loaded}`,
      hint: 'a policy that fails to load leaves the last good set serving: tolerator_policy_load_errors_total and its log name the file and field',
    };
  }
  return { id, ok: true, message: `tolerator serves the ${loaded} polic${loaded === 1 ? 'y' : 'ies'} of ConfigMap ${configMap.name}` };
}

/**
 * The words of each object the node half of the pattern is checked on: the check's id (the audit
 * rule of the same finding), its plural, what was not checked without policies, the API that may
 * not be served, the fix, and what a clean list means.
 */
const nodeSideChecks = {
  Node: {
    id: 'node-pattern',
    plural: 'nodes',
    unchecked: "for a group's label and taint",
    notServed: 'the API server does not serve v1 Nodes: none to check',
    hint: 'a node of group G carries the label and the taint of G together (docs/tenancy.md, "The node half"); tolerator audit lists them all',
    clean: (count: number) => `${count} nodes carry each group's label and taint together, or neither`,
  },
  NodePool: {
    id: 'nodepool-pattern',
    plural: 'NodePools',
    unchecked: "for a group's label and taint",
    notServed: 'the API server does not serve karpenter.sh/v1 NodePools (Karpenter is not installed): none to check',
    hint: 'a node of group G carries the label and the taint of G together (docs/tenancy.md, "The node half"); tolerator audit lists them all',
    clean: (count: number) => `${count} NodePools carry each group's label and taint together, or neither`,
  },
  RuntimeClass: {
    id: 'runtimeclass-pattern',
    plural: 'RuntimeClasses',
    unchecked: "for scheduling that reaches a group's nodes",
    notServed: 'the API server does not serve node.k8s.io/v1 RuntimeClasses: none to check',
    hint: 'the RuntimeClass admission plugin merges a RuntimeClass\'s scheduling into every pod that names it: list it under the group in spec.runtimeClasses, or take the group\'s toleration and label out of its scheduling (docs/tenancy.md, "RuntimeClasses"); tolerator audit lists them all',
    clean: (count: number) =>
      `of ${count} RuntimeClass${count === 1 ? '' : 'es'}, none reaches a group's nodes unless spec.runtimeClasses lists it for that group`,
  },
} as const;

/**
 * Nodes, NodePools or RuntimeClasses that break the node half of the dedicated-node pattern
 * (src/tenancy/node-side.ts, src/tenancy/runtime-classes.ts: the audit's node-pattern,
 * nodepool-pattern and runtimeclass-pattern findings): `observed` is how many were looked at and
 * each finding's message, the reason they could not be read, or undefined when the API is not
 * served (NodePools without Karpenter).
 */
export function nodePatternCheck(
  kind: keyof typeof nodeSideChecks,
  observed: { readonly count: number; readonly findings: readonly string[] } | string | undefined,
  policies: number,
): CheckResult {
  const { id, plural, unchecked, notServed, hint, clean } = nodeSideChecks[kind];
  if (policies === 0) {
    return { id, ok: true, skipped: true, message: `no TenancyPolicy in the ConfigMap: the ${plural} were not checked ${unchecked}` };
  }
  if (observed === undefined) return { id, ok: true, skipped: true, message: notServed };
  if (typeof observed === 'string') return { id, ok: false, message: `the ${plural} could not be read: ${observed}` };
  if (observed.findings.length > 0) {
    return {
      id,
      ok: false,
      message: `${observed.findings.length} finding${observed.findings.length === 1 ? '' : 's'} on ${observed.count} ${plural}: ${spellOut(observed.findings, (finding) => finding, '; ', 'findings')}`,
      hint,
    };
  }
  return { id, ok: true, message: clean(observed.count) };
}

/** The exit code: 0 when every check that ran passed, 1 otherwise. */
export function checkExitCode(results: readonly CheckResult[]): number {
  return results.every((result) => result.ok) ? 0 : 1;
}

export function formatCheckLines(results: readonly CheckResult[]): string {
  return results
    .map((result) => {
      const mark = result.skipped === true ? '-' : result.ok ? '✓' : '✗';
      return `${mark} ${result.message}${!result.ok && result.hint !== undefined ? `\n    hint: ${result.hint}` : ''}\n`;
    })
    .join('');
}

/** `kubernetes_feature_enabled{name="X",stage="…"} 1` and `tolerator_feature_gate_enabled{name="X",source="…"} 1` samples of an exposition. */
export function gateSamples(
  exposition: string,
  metric: 'kubernetes_feature_enabled' | 'tolerator_feature_gate_enabled',
): Map<string, boolean> {
  const found = new Map<string, boolean>();
  const prefix = `${metric}{`;
  for (const line of exposition.split('\n')) {
    if (!line.startsWith(prefix)) continue;
    const name = /name="([^"]*)"/.exec(line)?.[1];
    const value = line.slice(line.lastIndexOf(' ') + 1);
    if (name !== undefined && (value === '0' || value === '1')) found.set(name, value === '1');
  }
  return found;
}

/** The value of an unlabelled gauge (`tolerator_policies_loaded 2`), undefined when absent. */
export function gaugeValue(exposition: string, metric: string): number | undefined {
  for (const line of exposition.split('\n')) {
    if (line.startsWith(`${metric} `)) {
      const value = Number(line.slice(metric.length + 1));
      return Number.isFinite(value) ? value : undefined;
    }
  }
  return undefined;
}
