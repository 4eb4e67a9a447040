/**
 * `tolerator audit`: every existing pod that breaks one of tolerator's rules (src/audit/audit-rules.ts)
 * under the same policies and flags as `serve`, from a file (`--cluster-state FILE` holding
 * Namespaces, Nodes and Pods) or from the cluster (`--kubeconfig FILE`, or the in-cluster service
 * account), read page by page.
 *
 * Output: a table (NAMESPACE NAME NODE RULE MESSAGE), `-o json` or `-o yaml` (the same document)
 * (`{violations: [{namespace, name, node, rule, message, policy?}], undecided, summary}`), sorted
 * by namespace, pod and rule. Exit code: 0 nothing found, 1 something found, 2 bad input (flags,
 * files, policies, or a pod that could not be judged), with the reason on stderr.
 */
import type { ClusterFacts } from '../admission/cluster-facts.js';
import type { AuditSettings, NamespaceExclusion } from '../audit/audit-rules.js';
import { auditJson, auditTable, terminalSafe } from '../audit/audit-summary.js';
import { namespaceAsRead, nodeAsRead } from '../api/cluster-objects.js';
import type { Namespace, Node } from '../api/types.js';
import { isJsonObject } from '../api/types.js';
import { stringify } from 'yaml';
import { parseClusterState, staticClusterFacts } from '../kube/cluster-state-file.js';
import { emptyPolicySet } from '../tenancy/policy-set.js';
import { podsAsOnePage, runAudit, type PodPages } from './audit-run.js';
import type { CommandDefinition, CommandIo } from './command.js';
import { UsageError, type FlagSpec, type ParsedFlags } from './flags.js';
import { admissionFlags, readAdmissionSettings } from './options.js';
import { loadPolicies } from './runtime.js';

/**
 * The webhooks' namespaceSelector in deploy/base (mutating-webhook.yaml and validating-webhook.yaml):
 * `kubernetes.io/metadata.name NotIn [kube-system, kube-node-lease, tolerator-system]` and
 * `tolerator.dev/ignore NotIn ["true"]`. test/cli/audit.test.ts reads the manifests and holds
 * these to them.
 */
export const defaultExcludedNamespaces = ['kube-system', 'kube-node-lease', 'tolerator-system'] as const;
export const defaultExcludedNamespaceLabel = 'tolerator.dev/ignore=true';

/** The exclusion flags, shared with `serve`'s periodic audit. */
export const exclusionFlags = {
  'excluded-namespaces': {
    kind: 'string',
    placeholder: 'NS1,NS2',
    help: `namespaces the webhooks do not review, whose pods are audited only with --all ('' for none; default ${defaultExcludedNamespaces.join(',')}, as deploy/ installs them)`,
  },
  'excluded-namespace-label': {
    kind: 'string',
    placeholder: 'KEY=VALUE',
    help: `a namespace carrying this label is not reviewed either ('' for none; default ${defaultExcludedNamespaceLabel})`,
  },
} as const satisfies Record<string, FlagSpec>;

export const auditFlags = {
  ...admissionFlags,
  ...exclusionFlags,
  'cluster-state': {
    kind: 'string',
    placeholder: 'FILE',
    help: 'Namespaces, Nodes and Pods to audit (multi-document YAML, JSON, or a v1 List: kubectl get namespaces,nodes,pods -A -o yaml), instead of a cluster',
  },
  kubeconfig: {
    kind: 'string',
    placeholder: 'FILE',
    help: 'the cluster to audit (default, as kubectl: the files KUBECONFIG lists, else ~/.kube/config, else the in-cluster service account)',
  },
  context: { kind: 'string', placeholder: 'NAME', help: 'the kubeconfig context to use (default: its current-context)' },
  namespace: { kind: 'string', placeholder: 'NS', short: 'n', help: 'audit the pods of this namespace only' },
  'all-namespaces': { kind: 'boolean', short: 'A', help: 'audit the pods of every namespace (the default; for kubectl habits)' },
  all: { kind: 'boolean', help: 'also audit mirror pods and pods in namespaces the webhooks exclude' },
  output: { kind: 'string', placeholder: 'FORMAT', short: 'o', help: 'output format (default table)', choices: ['table', 'json', 'yaml'] },
} as const satisfies Record<string, FlagSpec>;

export const auditCommand: CommandDefinition = {
  name: 'audit',
  summary: 'every existing pod that breaks a rule, from the cluster or --cluster-state FILE',
  flags: auditFlags,
  outcomes: { ok: 'no pod breaks a rule', found: 'a pod breaks a rule' },
  details:
    'A pod that could not be judged (a malformed object in a file, a policy that cannot be evaluated for it) is named on stderr and makes the exit code 2.',
  run: audit,
};

/** The exclusion the flags give, defaulting to the shipped manifests'. */
export function readExclusion(flags: ParsedFlags): NamespaceExclusion {
  const names = flags.values.get('excluded-namespaces') as string | undefined;
  const label = (flags.values.get('excluded-namespace-label') as string | undefined) ?? defaultExcludedNamespaceLabel;
  let parsedLabel: NamespaceExclusion['label'];
  if (label !== '') {
    const eq = label.indexOf('=');
    if (eq <= 0) throw new UsageError(`--excluded-namespace-label must be KEY=VALUE, got ${JSON.stringify(label)}`);
    parsedLabel = { key: label.slice(0, eq), value: label.slice(eq + 1) };
  }
  const list =
    names === undefined
      ? defaultExcludedNamespaces
      : names
          .split(',')
          .map((name) => name.trim())
          .filter((name) => name !== '');
  return { names: new Set(list), label: parsedLabel };
}

/**
 * The CLI's pace against an API server: client-go's default client rate (rest.Config QPS 5) and
 * its pager's page size (500, as `kubectl get --chunk-size` too): 2,500 pods a second at most.
 */
const cliPageSize = 500;
const cliRequestsPerSecond = 5;
/**
 * 16 MiB: a page of 500 ordinary pods (3 to 8 KB each) is at most 4 MB; a larger page, of pods a
 * tenant made huge (up to etcd's 1.5 MiB each), is asked for again in smaller pages
 * (src/kube/paged-list.ts), so the command holds tens of MiB of page at a time, not 750 MB.
 */
const cliMaxPageBytes = 16 * 1024 * 1024;

async function audit(flags: ParsedFlags, io: CommandIo): Promise<number> {
  if (flags.positionals.length > 0) throw new UsageError(`audit takes no arguments, got ${JSON.stringify(flags.positionals[0])}`);
  const output = (flags.values.get('output') as 'table' | 'json' | 'yaml' | undefined) ?? 'table';
  const namespace = flags.values.get('namespace') as string | undefined;
  if (namespace !== undefined && flags.values.get('all-namespaces') === true) throw new UsageError('give -n NAMESPACE or -A, not both');
  const admission = readAdmissionSettings(flags);
  const settings: AuditSettings = {
    gates: admission.gates,
    enabled: new Set(admission.enabled),
    policies: admission.policiesDir === undefined ? emptyPolicySet : loadPolicies(admission.policiesDir),
    exclusion: readExclusion(flags),
    all: flags.values.get('all') === true,
    podNodeSelector: admission.podNodeSelector,
  };
  const kubeconfig = flags.values.get('kubeconfig') as string | undefined;
  if (admission.clusterStateFile !== undefined && kubeconfig !== undefined) {
    throw new UsageError('give --cluster-state FILE or --kubeconfig FILE, not both');
  }
  const source =
    admission.clusterStateFile !== undefined
      ? fileSource(admission.clusterStateFile, io)
      : await clusterSource({ path: kubeconfig, context: flags.values.get('context') as string | undefined }, namespace, io);
  const pages = namespace === undefined || admission.clusterStateFile === undefined ? source.pages : inNamespace(source.pages, namespace);
  const result = await runAudit(pages, source.facts, settings);
  io.stdout(output === 'json' ? auditJson(result) : output === 'yaml' ? stringify(JSON.parse(auditJson(result))) : auditTable(result));
  for (const pod of result.undecided) {
    io.stderr(`tolerator audit: ${terminalSafe(`could not judge pod "${pod.namespace}/${pod.name}": ${pod.message}`)}\n`);
  }
  if (result.undecided.length > 0) return 2;
  return result.violations.length > 0 ? 1 : 0;
}

/** `-n NAMESPACE` on a file: the pods of one namespace, the others passed over before they are judged. */
function inNamespace(pages: PodPages, namespace: string): PodPages {
  const ofNamespace = (pod: unknown): boolean => isJsonObject(pod) && isJsonObject(pod.metadata) && pod.metadata.namespace === namespace;
  return (handlers) =>
    pages({
      ...handlers,
      onPage: (pods) => handlers.onPage(pods.filter(ofNamespace)),
      onSkipped: (pod) => {
        if (pod.namespace === namespace) handlers.onSkipped(pod);
      },
    });
}

interface AuditSource {
  readonly pages: PodPages;
  readonly facts: ClusterFacts;
}

function fileSource(file: string, io: CommandIo): AuditSource {
  const state = parseClusterState(io.readFile(file), file, { readPods: true });
  for (const warning of state.warnings) io.stderr(`tolerator audit: ${terminalSafe(warning)}\n`);
  if (state.pods.length === 0)
    throw new UsageError(`${file}: no v1 Pod found (kubectl get namespaces,nodes,pods -A -o yaml writes all three)`);
  return { pages: podsAsOnePage(state.pods), facts: staticClusterFacts(state) };
}

/** The cluster: Namespaces and Nodes listed first (page by page), then the pods page by page, at the CLI's pace. */
async function clusterSource(
  kubeconfig: { path: string | undefined; context: string | undefined },
  namespace: string | undefined,
  io: CommandIo,
): Promise<AuditSource> {
  // @kubernetes/client-node is costly to import; only a cluster audit needs it.
  const { loadKubeConfig } = await import('../kube/kube-config.js');
  const { createApiRequest, describeFailure } = await import('../kube/api-requests.js');
  const { listInPages, defaultMaxRestarts } = await import('../kube/paged-list.js');
  const kubeConfig = loadKubeConfig({
    kubeconfigPath: kubeconfig.path,
    context: kubeconfig.context,
    env: io.env ?? {},
    discover: { homeDir: io.homeDir },
  });
  if (kubeConfig === undefined) {
    throw new UsageError(
      'no cluster: give --cluster-state FILE or --kubeconfig FILE, set KUBECONFIG, write ~/.kube/config, or run in a pod with a service account',
    );
  }
  const request = createApiRequest(kubeConfig);
  let last = 0;
  const pause = async (): Promise<void> => {
    const wait = last + 1000 / cliRequestsPerSecond - Date.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    last = Date.now();
  };
  const options = { pageSize: cliPageSize, maxPageBytes: cliMaxPageBytes, maxRestarts: defaultMaxRestarts, pause };
  // What the informers keep of each object (src/api/cluster-objects.ts): the command holds every
  // Namespace and Node while it audits, and a real Node is 19 KB of JSON of which it reads a few hundred bytes.
  const listAll = async <T>(path: string, keep: (item: unknown) => T | undefined): Promise<T[]> => {
    let all: T[] = [];
    await listInPages(request, path, options, {
      onPage: (items) => {
        for (const item of items) {
          const kept = keep(item);
          if (kept !== undefined) all.push(kept);
        }
      },
      onRestart: () => {
        all = [];
      },
    });
    return all;
  };
  const listed = staticClusterFacts({
    namespaces: await listAll('/api/v1/namespaces', namespaceAsRead),
    nodes: await listAll('/api/v1/nodes', nodeAsRead),
  });
  // A namespace or node created after its list was read is read on its own (404: it does not exist).
  const read = async <T>(path: string): Promise<T | undefined> => {
    const response = await request('GET', path);
    if (response.status === 404) return undefined;
    if (response.status !== 200 || !isJsonObject(response.body)) throw new Error(`reading ${path}: ${describeFailure(response)}`);
    return response.body as T;
  };
  const facts: ClusterFacts = {
    ...listed,
    getNamespace: async (name) =>
      (await listed.getNamespace(name)) ?? namespaceAsRead(await read<Namespace>(`/api/v1/namespaces/${encodeURIComponent(name)}`)),
    readNode: async (name) => listed.getNode(name) ?? nodeAsRead(await read<Node>(`/api/v1/nodes/${encodeURIComponent(name)}`)),
  };
  // -n: the API server lists the one namespace's pods, so the others are never sent.
  const podsPath = namespace === undefined ? '/api/v1/pods' : `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods`;
  return { facts, pages: (handlers) => listInPages(request, podsPath, options, handlers) };
}
