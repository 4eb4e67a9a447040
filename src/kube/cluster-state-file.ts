/**
 * The offline cluster-state source (`--cluster-state FILE`): Namespace and Node manifests, as
 * `kubectl get namespaces,nodes -o yaml` writes them (a `v1` `List`) or as hand-written
 * multi-document YAML, or the same in JSON. Used when there is no cluster to watch, and by the
 * offline commands (`review`, `explain`, `simulate`, `test`). `tolerator audit` also reads the
 * Pods of the same file (`kubectl get namespaces,nodes,pods -A -o yaml`); the other commands skip
 * them with a warning, as any other kind.
 *
 * `parseClusterState` is pure; `loadClusterStateFile` is the edge that reads the file.
 */
import { readFileSync } from 'node:fs';
import { parseAllDocuments } from 'yaml';
import type { ClusterFacts } from '../admission/cluster-facts.js';
import { namespaceAsRead, nodeAsRead, runtimeClassAsRead } from '../api/cluster-objects.js';
import type { Namespace, Node, ObjectMeta, Pod, RuntimeClass } from '../api/types.js';
import { controllerOf, type WorkloadRef } from '../audit/workloads.js';
import { isJsonObject } from '../api/types.js';
import type { KubeLogger } from './kube-logger.js';

export interface ClusterState {
  namespaces: Namespace[];
  nodes: Node[];
  /** Read only when asked (`readPods`), else skipped with a warning; in the file's order. */
  pods: Pod[];
  /**
   * With `readPods`: each apps/v1 ReplicaSet's and batch/v1 Job's controller (its Deployment, its
   * CronJob), keyed `namespace/kind/name`, for `tolerator audit --group-by workload`. Only the
   * reference is kept, never the object.
   */
  controllers: Map<string, WorkloadRef | undefined>;
  /**
   * Karpenter NodePools (`karpenter.sh/v1`, as `kubectl get nodepools -o yaml` writes them), kept
   * whole, in the file's order: the audit judges their templates (src/tenancy/node-side.ts).
   */
  nodePools: unknown[];
  /**
   * With `readPods`: DRA ResourceClaims (`resource.k8s.io/v1`, as `kubectl get resourceclaims -A -o
   * yaml` writes them), kept whole, keyed `namespace/name`: the audit judges their allocations.
   */
  resourceClaims: unknown[];
  /**
   * RuntimeClasses (`node.k8s.io/v1`, as `kubectl get runtimeclasses -o yaml` writes them), as the
   * informer keeps them: DedicatedNodes names the one whose scheduling a refused pod carries, and
   * the audit judges their scheduling (src/tenancy/runtime-classes.ts).
   */
  runtimeClasses: RuntimeClass[];
  /** Documents and list items that were skipped, each naming where it was and why. */
  warnings: string[];
}

/** List kinds whose `items` are read; the typed lists name the kind their items default to. */
type ItemKind = 'Namespace' | 'Node' | 'Pod' | 'NodePool' | 'ResourceClaim' | 'RuntimeClass';

const listKinds = new Map<string, ItemKind | undefined>([
  ['List', undefined],
  ['NamespaceList', 'Namespace'],
  ['NodeList', 'Node'],
  ['PodList', 'Pod'],
  ['NodePoolList', 'NodePool'],
  ['ResourceClaimList', 'ResourceClaim'],
  ['RuntimeClassList', 'RuntimeClass'],
]);

/** The RuntimeClass API (k8s.io/api/node/v1). */
const runtimeClassApiVersion = 'node.k8s.io/v1';

/** Karpenter's API (pkg/apis/v1 of sigs.k8s.io/karpenter v1.15.0). */
const nodePoolApiVersion = 'karpenter.sh/v1';

/** The DRA API the audit reads claims from (served from Kubernetes 1.34). */
const resourceClaimApiVersion = 'resource.k8s.io/v1';

/**
 * The apiVersion of a list kind and of its items: v1, but karpenter.sh/v1 for NodePools,
 * resource.k8s.io/v1 for ResourceClaims and node.k8s.io/v1 for RuntimeClasses.
 */
function apiVersionOf(kind: ItemKind | undefined): string {
  return kind === 'NodePool'
    ? nodePoolApiVersion
    : kind === 'ResourceClaim'
      ? resourceClaimApiVersion
      : kind === 'RuntimeClass'
        ? runtimeClassApiVersion
        : 'v1';
}

export interface ClusterStateOptions {
  /** Keep v1 Pods (and PodLists) too; without it they are skipped with a warning. */
  readonly readPods?: boolean;
}

/**
 * Reads Namespaces and Nodes out of `text`, which holds one or more YAML documents (JSON is
 * YAML, so a JSON file parses the same way). `source` names the text in messages (a path).
 *
 * - A `v1` `List`, `NamespaceList` or `NodeList` contributes its `items`, recursively (a List
 *   may hold Lists). Items of a typed list may omit `apiVersion`/`kind`, as the API server's own
 *   list responses do; they take the list's item kind.
 * - Any other kind, or a Namespace/Node of an apiVersion other than `v1`, is skipped with a
 *   warning naming the document and item.
 * - Malformed YAML/JSON, a document that is not an object, or a Namespace/Node without a
 *   non-empty string `metadata.name` throws, naming `source` and the document (1-based, counting
 *   `---`-separated documents as a person reading the file would).
 * - The same name twice (for a Pod: namespace and name): the later object wins, with a warning.
 * - With `readPods`, a Pod without `metadata.namespace` is in `default`, as `kubectl` reads it; one
 *   whose `metadata.namespace` is not a string throws.
 */
export function parseClusterState(text: string, source: string, options: ClusterStateOptions = {}): ClusterState {
  const namespaces = new Map<string, Namespace>();
  const nodes = new Map<string, Node>();
  const pods = new Map<string, Pod>();
  const controllers = new Map<string, WorkloadRef | undefined>();
  const nodePools = new Map<string, unknown>();
  const resourceClaims = new Map<string, unknown>();
  const runtimeClasses = new Map<string, RuntimeClass>();
  const warnings: string[] = [];
  const state = (): ClusterState => ({
    namespaces: [...namespaces.values()],
    nodes: [...nodes.values()],
    pods: [...pods.values()],
    controllers,
    nodePools: [...nodePools.values()],
    resourceClaims: [...resourceClaims.values()],
    runtimeClasses: [...runtimeClasses.values()],
    warnings,
  });

  // `kubectl get … -o json` output is one JSON document: JSON.parse reads it in a fraction of the
  // time and memory the YAML parser needs (3.5 MB of namespaces: 3.4 s and a 223 MB heap peak
  // through parseAllDocuments). JSON that does not parse falls through to the YAML parser, whose
  // message names the line and column.
  const trimmed = text.trimStart();
  if (trimmed.startsWith('{') || trimmed.startsWith('[')) {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      value = undefined;
    }
    if (value !== undefined) {
      collect(value, `${source}: document 1`, '', undefined);
      return state();
    }
  }
  const documents = parseAllDocuments(text);
  documents.forEach((document, index) => {
    const where = `${source}: document ${index + 1}`;
    const [firstError] = document.errors;
    if (firstError !== undefined) {
      // The first line of the yaml library's message ends "at line L, column C:" (a code
      // excerpt follows on the next lines).
      throw new Error(`${where}: ${firstLine(firstError.message).replace(/:$/, '')}`);
    }
    const value: unknown = document.toJS();
    if (value === null || value === undefined) return; // an empty document, e.g. after a trailing `---`
    collect(value, where, '', undefined);
  });

  /** `document` names the source and document, `path` the item within it ('' for the document itself). */
  function collect(value: unknown, document: string, path: string, defaultKind: ItemKind | undefined): void {
    const where = path === '' ? document : `${document}, ${path}`;
    if (!isJsonObject(value)) {
      throw new Error(`${where}: expected a Kubernetes object, got ${describe(value)}`);
    }
    const kind = typeof value.kind === 'string' ? value.kind : defaultKind;
    const apiVersion =
      typeof value.apiVersion === 'string' ? value.apiVersion : defaultKind !== undefined ? apiVersionOf(defaultKind) : undefined;
    const label = `${apiVersion ?? '(no apiVersion)'} ${kind ?? '(no kind)'}`;

    if (kind !== undefined && listKinds.has(kind) && apiVersion === apiVersionOf(listKinds.get(kind))) {
      const items = value.items ?? [];
      if (!Array.isArray(items)) throw new Error(`${where}: ${kind}.items is not a list`);
      // A for loop, not forEach: a PodList of 50,000 pods is one array.
      for (let itemIndex = 0; itemIndex < items.length; itemIndex++) {
        const item: unknown = items[itemIndex];
        collect(item, document, path === '' ? `items[${itemIndex}]` : `${path}.items[${itemIndex}]`, listKinds.get(kind));
      }
      return;
    }
    if (kind === 'Pod' && apiVersion === 'v1' && options.readPods === true) {
      const name = nameOf(value);
      if (name === undefined) throw new Error(`${where}: Pod has no metadata.name`);
      const metadata = value.metadata as Record<string, unknown>;
      // Absent, null or '': `default`, as kubectl reads it. Anything else is not a namespace to guess.
      if (metadata.namespace !== undefined && metadata.namespace !== null && typeof metadata.namespace !== 'string') {
        throw new Error(`${where}: Pod ${JSON.stringify(name)} has a metadata.namespace that is not a string`);
      }
      const namespace = typeof metadata.namespace === 'string' && metadata.namespace !== '' ? metadata.namespace : 'default';
      const key = `${namespace}/${name}`;
      if (pods.has(key)) warnings.push(`${where}: Pod "${key}" appears again; the later one is used`);
      // Its other fields are checked by the audit, which reads them (src/admission/object-shape.ts).
      pods.set(key, { ...value, apiVersion, kind, metadata: { ...metadata, namespace } });
      return;
    }
    if (
      options.readPods === true &&
      ((kind === 'ReplicaSet' && apiVersion === 'apps/v1') || (kind === 'Job' && apiVersion === 'batch/v1')) &&
      nameOf(value) !== undefined
    ) {
      const metadata = value.metadata as ObjectMeta;
      const namespace = typeof metadata.namespace === 'string' && metadata.namespace !== '' ? metadata.namespace : 'default';
      controllers.set(`${namespace}/${kind}/${nameOf(value) ?? ''}`, controllerOf(metadata));
      return;
    }
    if ((kind === 'Namespace' || kind === 'Node') && apiVersion === 'v1') {
      const name = nameOf(value);
      if (name === undefined) throw new Error(`${where}: ${kind} has no metadata.name`);
      if ((kind === 'Namespace' ? namespaces : nodes).has(name)) {
        warnings.push(`${where}: ${kind} "${name}" appears again; the later one is used`);
      }
      // Checked above: an object with a non-empty string metadata.name, which is all both types
      // require (their other fields are optional). Kept as the informers keep a listed one
      // (src/api/cluster-objects.ts), so that a command decides on what the server would.
      const object = { ...value, apiVersion, kind };
      if (kind === 'Namespace') namespaces.set(name, namespaceAsRead(object) ?? (object as Namespace));
      else nodes.set(name, nodeAsRead(object) ?? (object as Node));
      return;
    }
    if (kind === 'NodePool' && apiVersion === nodePoolApiVersion) {
      const name = nameOf(value);
      if (name === undefined) throw new Error(`${where}: NodePool has no metadata.name`);
      if (nodePools.has(name)) warnings.push(`${where}: NodePool "${name}" appears again; the later one is used`);
      nodePools.set(name, { ...value, apiVersion, kind });
      return;
    }
    if (kind === 'ResourceClaim' && apiVersion === resourceClaimApiVersion && options.readPods === true) {
      const name = nameOf(value);
      if (name === undefined) throw new Error(`${where}: ResourceClaim has no metadata.name`);
      const metadata = value.metadata as Record<string, unknown>;
      const namespace = typeof metadata.namespace === 'string' && metadata.namespace !== '' ? metadata.namespace : 'default';
      const key = `${namespace}/${name}`;
      if (resourceClaims.has(key)) warnings.push(`${where}: ResourceClaim "${key}" appears again; the later one is used`);
      resourceClaims.set(key, { ...value, apiVersion, kind, metadata: { ...metadata, namespace } });
      return;
    }
    if (kind === 'RuntimeClass' && apiVersion === runtimeClassApiVersion) {
      const name = nameOf(value);
      const kept = runtimeClassAsRead({ ...value, apiVersion, kind });
      if (name === undefined || kept === undefined) throw new Error(`${where}: RuntimeClass has no metadata.name`);
      if (runtimeClasses.has(name)) warnings.push(`${where}: RuntimeClass "${name}" appears again; the later one is used`);
      runtimeClasses.set(name, kept);
      return;
    }
    const read =
      options.readPods === true
        ? 'v1 Namespace, Node, Pod, apps/v1 ReplicaSet, batch/v1 Job, karpenter.sh/v1 NodePool, resource.k8s.io/v1 ResourceClaim, node.k8s.io/v1 RuntimeClass'
        : 'v1 Namespace, Node, karpenter.sh/v1 NodePool, node.k8s.io/v1 RuntimeClass';
    warnings.push(`${where}: ${label} ignored (only ${read} and lists of them are read)`);
  }

  return state();
}

/**
 * A ClusterFacts over fixed objects: always synced (there is nothing to wait for), answering
 * from Maps by name. A namespace it does not hold does not exist, as far as it knows.
 */
export function staticClusterFacts(state: {
  namespaces: readonly Namespace[];
  nodes: readonly Node[];
  runtimeClasses?: readonly RuntimeClass[];
}): ClusterFacts {
  const runtimeClassList: readonly RuntimeClass[] = state.runtimeClasses ?? [];
  const runtimeClasses = new Map(runtimeClassList.map((runtimeClass) => [runtimeClass.metadata.name, runtimeClass]));
  const namespaces = new Map(state.namespaces.map((namespace) => [namespace.metadata.name, namespace]));
  const nodes = new Map(state.nodes.map((node) => [node.metadata.name, node]));
  const nodeList: readonly Node[] = [...nodes.values()];
  return {
    getNamespace: (name) => Promise.resolve(namespaces.get(name)),
    getNode: (name) => nodes.get(name),
    // The file is the whole cluster: a node it does not list does not exist.
    readNode: (name) => Promise.resolve(nodes.get(name)),
    listNodes: () => nodeList,
    knowsNodes: true,
    readRuntimeClass: (name) => Promise.resolve(runtimeClasses.get(name)),
    listRuntimeClasses: () => runtimeClassList,
    isSynced: () => true,
    stop: () => Promise.resolve(),
  };
}

/** Reads and parses `path` (the edge); each warning is logged once, naming the file. */
export function loadClusterStateFile(path: string, logger: Pick<KubeLogger, 'warn'>): ClusterFacts {
  const state = parseClusterState(readFileSync(path, 'utf8'), path);
  for (const warning of state.warnings) logger.warn({ source: path }, warning);
  return staticClusterFacts(state);
}

function nameOf(object: Record<string, unknown>): string | undefined {
  const metadata = object.metadata;
  if (!isJsonObject(metadata)) return undefined;
  return typeof metadata.name === 'string' && metadata.name !== '' ? metadata.name : undefined;
}

function describe(value: unknown): string {
  if (Array.isArray(value)) return 'a list';
  return typeof value === 'string' ? `the string ${JSON.stringify(value)}` : `a ${typeof value}`;
}

function firstLine(message: string): string {
  return message.split('\n', 1)[0] ?? message;
}
