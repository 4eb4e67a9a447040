/**
 * `tolerator audit`: every existing pod that breaks one of tolerator's rules (src/audit/audit-rules.ts)
 * under the same policies and flags as `serve`, from a file (`--cluster-state FILE` holding
 * Namespaces, Nodes and Pods) or from the cluster (`--kubeconfig FILE`, or the in-cluster service
 * account), read page by page.
 *
 * Output: a table (NAMESPACE NAME NODE RULE MESSAGE) and a summary by rule and namespace, or
 * `-o json` (`{violations: [{namespace, name, node, rule, message, policy?}], undecided, summary}`),
 * sorted by namespace, pod and rule; `--group-by workload` gathers them by the owning Deployment,
 * StatefulSet, DaemonSet, Job or CronJob (src/audit/workloads.ts). `-o yaml`: the PolicyReports the
 * periodic audit of `serve` would write (the same src/audit/policy-reports.ts), for
 * `kubectl apply -f -`. `--rule` and `-n/--namespace` narrow what is audited. While it reads a
 * cluster, and stderr is a terminal, a progress line is kept on stderr.
 *
 * Exit code: 0 nothing found, 1 something found, 2 bad input (flags, files, policies, or a pod
 * that could not be judged), with the reason on stderr.
 */
import type { ClusterFacts } from '../admission/cluster-facts.js';
import type { AuditSettings, NamespaceExclusion } from '../audit/audit-rules.js';
import { auditNodeSide, auditRuleNames, isAuditRuleName, tenancyRuleNames, type AuditRuleName } from '../audit/audit-rules.js';
import { auditJson, auditTable, auditWorkloadTable, terminalSafe, type AuditResult } from '../audit/audit-summary.js';
import { buildPolicyReports, reportApis } from '../audit/policy-reports.js';
import { controllerOf, groupByWorkload, workloadOf, type WorkloadFinding, type WorkloadRef } from '../audit/workloads.js';
import { namespaceAsRead, nodeAsRead, runtimeClassAsRead } from '../api/cluster-objects.js';
import type { Namespace, Node, ObjectMeta } from '../api/types.js';
import { isJsonObject } from '../api/types.js';
import { stringify } from 'yaml';
import { parseClusterState, staticClusterFacts } from '../kube/cluster-state-file.js';
import { emptyPolicySet } from '../tenancy/policy-set.js';
import { podsAsOnePage, runAudit, type PodPages } from '../server/audit-run.js';
import type { CommandDefinition, CommandIo } from './command.js';
import { UsageError, type FlagSpec, type ParsedFlags } from './flags.js';
import { admissionFlags, readAdmissionSettings } from './options.js';
import { loadPolicies } from '../server/tenancy-policies.js';

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
    help: 'Namespaces, Nodes, Pods, Karpenter NodePools and DRA ResourceClaims to audit (multi-document YAML, JSON, or a v1 List: kubectl get namespaces,nodes,pods,nodepools,resourceclaims -A -o yaml), instead of a cluster',
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
  rule: {
    kind: 'string',
    placeholder: 'RULE1,RULE2',
    help: `report only these rules (${auditRuleNames.join(', ')}); a pod breaking none of them passes`,
  },
  'group-by': {
    kind: 'string',
    placeholder: 'pod|workload',
    help: 'one row per pod (default), or per owning workload (Deployment, StatefulSet, DaemonSet, Job, CronJob, through owner references) with its pod count',
    choices: ['pod', 'workload'],
  },
  output: {
    kind: 'string',
    placeholder: 'FORMAT',
    short: 'o',
    help: 'output format (default table); yaml: the PolicyReports the server writes, for kubectl apply -f -',
    choices: ['table', 'json', 'yaml'],
  },
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

/** `--rule`: the rules named, each one of auditRuleNames. */
function readRules(raw: string | undefined): ReadonlySet<AuditRuleName> | undefined {
  if (raw === undefined) return undefined;
  const names = raw
    .split(',')
    .map((name) => name.trim())
    .filter((name) => name !== '');
  if (names.length === 0) throw new UsageError(`--rule needs at least one rule: ${auditRuleNames.join(', ')}`);
  for (const name of names) {
    if (!isAuditRuleName(name)) throw new UsageError(`--rule: no rule ${JSON.stringify(name)}; the rules are ${auditRuleNames.join(', ')}`);
  }
  return new Set(names as AuditRuleName[]);
}

async function audit(flags: ParsedFlags, io: CommandIo): Promise<number> {
  if (flags.positionals.length > 0) throw new UsageError(`audit takes no arguments, got ${JSON.stringify(flags.positionals[0])}`);
  const output = (flags.values.get('output') as 'table' | 'json' | 'yaml' | undefined) ?? 'table';
  const groupBy = (flags.values.get('group-by') as 'pod' | 'workload' | undefined) ?? 'pod';
  if (groupBy === 'workload' && output === 'yaml')
    throw new UsageError('-o yaml writes PolicyReports, one result per pod: it takes no --group-by');
  const namespace = flags.values.get('namespace') as string | undefined;
  if (namespace === '') throw new UsageError('-n/--namespace needs a namespace');
  if (namespace !== undefined && flags.values.get('all-namespaces') === true) throw new UsageError('give -n NAMESPACE or -A, not both');
  const rules = readRules(flags.values.get('rule') as string | undefined);
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
  const controllers = new Map<string, WorkloadRef | undefined>();
  let result: AuditResult;
  try {
    // The node half of the pattern: the cluster's Nodes and NodePools, unless -n narrows the audit to one namespace's pods.
    const note = (text: string): void => {
      io.stderr(`tolerator audit: ${terminalSafe(text)}\n`);
    };
    const clusterFindings =
      namespace === undefined
        ? auditNodeSide(source.facts.listNodes(), await source.nodePools(note), settings, await source.runtimeClasses(note))
        : [];
    result = await runAudit(pages, source.facts, settings, {
      clusterFindings,
      // The allocated DRA claims (of the one namespace with -n), each judged against its Namespace
      // as it is now, by the run that judges them in the server's periodic audit.
      claimPages:
        namespace === undefined || admission.clusterStateFile === undefined
          ? source.claimPages(note)
          : inNamespace(source.claimPages(note), namespace),
      ...(rules === undefined ? {} : { rules }),
      ...(groupBy === 'workload'
        ? {
            onFindings: (pod) => {
              controllers.set(`${pod.metadata?.namespace ?? ''}/${pod.metadata?.name ?? ''}`, controllerOf(pod.metadata));
            },
          }
        : {}),
    });
  } finally {
    source.done();
  }
  let workloads: WorkloadFinding[] | undefined;
  if (groupBy === 'workload') {
    const workloadOfPod = new Map<string, WorkloadRef>();
    for (const [key, controller] of controllers) {
      const slash = key.indexOf('/');
      workloadOfPod.set(key, await workloadOf(key.slice(0, slash), key.slice(slash + 1), controller, source.readController));
    }
    workloads = groupByWorkload(result.violations, workloadOfPod);
  }
  // Without policies the tenancy rules find nothing, so "No violations" would say nothing about a
  // pod that tolerates every group's taint: say that tenancy was not checked, and how to check it.
  const tenancyRules = tenancyRuleNames.filter((name) => rules === undefined || rules.has(name));
  if (admission.policiesDir === undefined && settings.enabled.has('DedicatedNodes') && tenancyRules.length > 0) {
    io.stderr(
      `tolerator audit: note: tenancy was not checked (no --policies): ${tenancyRules.join(', ')} judge pods, Nodes, NodePools, RuntimeClasses and ResourceClaims only against TenancyPolicies. ` +
        'Give the directory of the policies the server runs with, --policies DIR (the files of the tolerator-policies ConfigMap; policies/ holds the shipped examples).\n',
    );
  }
  io.stdout(
    output === 'yaml'
      ? policyReportsYaml(result, settings, new Date())
      : output === 'json'
        ? auditJson(result, workloads)
        : workloads === undefined
          ? auditTable(result)
          : auditWorkloadTable(result, workloads),
  );
  for (const pod of result.undecided) {
    const what = pod.kind === 'ResourceClaim' ? 'ResourceClaim' : 'pod';
    io.stderr(`tolerator audit: ${terminalSafe(`could not judge ${what} "${pod.namespace}/${pod.name}": ${pod.message}`)}\n`);
  }
  if (result.undecided.length > 0) return 2;
  return result.violations.length > 0 ? 1 : 0;
}

/**
 * `-o yaml`: the reports the periodic audit would write after this audit, as YAML documents (the
 * first report API, wgpolicyk8s.io/v1alpha2, which Kyverno and Policy Reporter read). The server
 * also deletes its report in a namespace with no violation left; `kubectl apply --prune` with
 * tolerator's report labels does the same (docs/audit.md has the command). No violations: a
 * comment only, no document.
 */
function policyReportsYaml(result: AuditResult, settings: AuditSettings, now: Date): string {
  const [api] = reportApis;
  if (api === undefined) throw new Error('no report API');
  const enforcement = new Map(settings.policies.policies.map((policy) => [policy.name, policy.enforcement]));
  const reports = [...buildPolicyReports(api, result, (name) => enforcement.get(name), now).values()];
  if (reports.length === 0) return `# no violations in ${result.summary.audited} pods audited: no ${api.kind}\n`;
  return reports.map((report) => stringify(report, { lineWidth: 0 })).join('---\n');
}

/** `-n NAMESPACE` on a file: the pods (or claims) of one namespace, the others passed over before they are judged. */
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
  /** The controller of a ReplicaSet or Job (`--group-by workload`); undefined: none, or it is gone. */
  readonly readController: (namespace: string, owner: WorkloadRef) => Promise<WorkloadRef | undefined>;
  /** The pods are read: the progress line, if any, is cleared. */
  readonly done: () => void;
  /**
   * The Karpenter NodePools (karpenter.sh/v1); none where the API server does not serve them, or
   * where the caller may not list them (then `note` says so, and the rest of the audit goes on).
   */
  readonly nodePools: (note: (text: string) => void) => Promise<readonly unknown[]>;
  /**
   * The DRA ResourceClaims (resource.k8s.io/v1), of every namespace or of `-n`'s, page by page;
   * none where the API server does not serve them or the caller may not list them (then `note`
   * says so).
   */
  readonly claimPages: (note: (text: string) => void) => PodPages;
  /** The RuntimeClasses (node.k8s.io/v1); none where the caller may not list them (then `note` says so). */
  readonly runtimeClasses: (note: (text: string) => void) => Promise<readonly unknown[]>;
}

function fileSource(file: string, io: CommandIo): AuditSource {
  const state = parseClusterState(io.readFile(file), file, { readPods: true });
  for (const warning of state.warnings) io.stderr(`tolerator audit: ${terminalSafe(warning)}\n`);
  if (state.pods.length === 0)
    throw new UsageError(`${file}: no v1 Pod found (kubectl get namespaces,nodes,pods -A -o yaml writes all three)`);
  return {
    pages: podsAsOnePage(state.pods),
    facts: staticClusterFacts(state),
    // The ReplicaSets and Jobs the file holds (kubectl get namespaces,nodes,pods,replicasets,jobs -A -o yaml).
    readController: (ownerNamespace, owner) => Promise.resolve(state.controllers.get(`${ownerNamespace}/${owner.kind}/${owner.name}`)),
    done: () => undefined,
    nodePools: () => Promise.resolve(state.nodePools),
    claimPages: () => podsAsOnePage(state.resourceClaims),
    runtimeClasses: () => Promise.resolve(state.runtimeClasses),
  };
}

/**
 * The progress line of a long run, on stderr when it is a terminal (kubectl and helm print none to
 * a pipe or a file): rewritten in place (`\r`, then erase to the end of the line) after each page.
 */
export function progressLine(io: Pick<CommandIo, 'stderr' | 'stderrIsTerminal'>): {
  readonly page: (pods: number) => void;
  readonly clear: () => void;
} {
  if (io.stderrIsTerminal !== true) return { page: () => undefined, clear: () => undefined };
  let read = 0;
  let shown = false;
  return {
    page: (pods) => {
      read += pods;
      shown = true;
      io.stderr(`\r\u001b[Ktolerator audit: ${read} pods read…`);
    },
    clear: () => {
      if (shown) io.stderr('\r\u001b[K');
      shown = false;
    },
  };
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
  const { listInPages, probeList, defaultMaxRestarts, defaultMaxItemBytes } = await import('../kube/paged-list.js');
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
  const progress = progressLine(io);
  // --group-by workload: each distinct ReplicaSet or Job that owns a pod with findings is read once
  // (cached), at the CLI's pace, its body bounded as one stored object's can be: the reads are as
  // many as the workloads in the output, never one per pod, and never a list of every ReplicaSet.
  const controllers = new Map<string, Promise<WorkloadRef | undefined>>();
  const readController = (ownerNamespace: string, owner: WorkloadRef): Promise<WorkloadRef | undefined> => {
    const collection = owner.kind === 'ReplicaSet' ? 'apis/apps/v1/namespaces/%/replicasets' : 'apis/batch/v1/namespaces/%/jobs';
    const path = `/${collection.replace('%', encodeURIComponent(ownerNamespace))}/${encodeURIComponent(owner.name)}`;
    let found = controllers.get(path);
    if (found === undefined) {
      found = (async () => {
        await pause();
        const response = await request('GET', path, undefined, { maxBodyBytes: defaultMaxItemBytes });
        if (response.status === 404) return undefined;
        if (response.status !== 200 || !isJsonObject(response.body)) throw new Error(`reading ${path}: ${describeFailure(response)}`);
        return controllerOf((response.body as { metadata?: ObjectMeta }).metadata);
      })();
      controllers.set(path, found);
    }
    return found;
  };
  // An API that may not be served (Karpenter's NodePools, DRA's claims before 1.34): one request
  // tells (404: not served, nothing to audit). A role made for the pods' audit
  // (deploy/overlays/audit) need not read them: a 403 is a note, and the rest is audited.
  const listIfServed = async (
    path: string,
    what: string,
    note: (text: string) => void,
    keep: (item: unknown) => unknown = (item) => item,
  ): Promise<readonly unknown[]> => {
    const probe = await probeList(request, path);
    if (!probe.listable) {
      if (probe.why === 'forbidden') note(`${what} not audited: ${probe.message}`);
      return [];
    }
    return listAll(path, keep);
  };
  const nodePools = (note: (text: string) => void): Promise<readonly unknown[]> =>
    listIfServed('/apis/karpenter.sh/v1/nodepools', 'Karpenter NodePools', note);
  // Judged as they arrive and dropped (src/server/audit-run.ts), as the server's audit reads them.
  const claimPages =
    (note: (text: string) => void): PodPages =>
    async (handlers) => {
      const path =
        namespace === undefined
          ? '/apis/resource.k8s.io/v1/resourceclaims'
          : `/apis/resource.k8s.io/v1/namespaces/${encodeURIComponent(namespace)}/resourceclaims`;
      const probe = await probeList(request, path);
      if (!probe.listable) {
        if (probe.why === 'forbidden') note(`ResourceClaims not audited: ${probe.message}`);
        return;
      }
      await listInPages(request, path, options, handlers);
    };
  // RuntimeClasses are served by every supported API server (node.k8s.io/v1 since 1.20); kept as
  // the informer keeps them.
  const runtimeClasses = (note: (text: string) => void): Promise<readonly unknown[]> =>
    listIfServed('/apis/node.k8s.io/v1/runtimeclasses', 'RuntimeClasses', note, runtimeClassAsRead);
  return {
    facts,
    readController,
    nodePools,
    claimPages,
    runtimeClasses,
    done: progress.clear,
    pages: (handlers) =>
      listInPages(request, podsPath, options, {
        ...handlers,
        onPage: async (items) => {
          await handlers.onPage(items);
          progress.page(items.length);
        },
      }),
  };
}
