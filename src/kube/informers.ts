/**
 * Namespace and Node caches kept by list+watch (client-node informers), behind ClusterFacts.
 *
 * What client-node 1.4's ListWatch (cache.js, watch.js) does by itself, and what this adds:
 *
 * - start(): lists, fills the cache, then watches from the list's resourceVersion. When the
 *   server closes a watch normally, it re-watches from the last resourceVersion it saw.
 * - 410 Gone, as an HTTP status on the watch request or as a watch `ERROR` event whose Status
 *   has `code: 410`: it forgets the resourceVersion and relists (the cache is reconciled against
 *   the new list, with 'delete' for objects that vanished). No 'error' event.
 * - Any other failure (a list that fails, a watch answered 500/403, a connection cut
 *   mid-stream: node-fetch's "Premature close") emits 'error' and the informer STOPS for good.
 *   This module restarts it after a backoff (restartDelayMs); the cache is kept, so decisions
 *   keep coming from the last known state while the watch is down, and the restarted watch
 *   resumes from the last resourceVersion (or relists on 410) and catches up.
 * - Watch.watch in 1.4 means to time out after 30 s but overwrites that signal, so a watch has
 *   no deadline: a half-open connection would leave the cache silently stale. The watch here
 *   asks the server to end each watch after 5 to 10 minutes (`timeoutSeconds`, as client-go's
 *   reflector does) and aborts it itself if it outlives that (then restarts as on an error).
 * - ListWatch.stop() cannot abort a watch whose response headers have not arrived yet (it only
 *   holds the request handle after that), so a stop() racing a reconnect would leak an open
 *   watch; the Watch here aborts any watch that connects after stop.
 *
 * Memory grows with the number of objects, not with their size: the caches hold what tolerator
 * reads of each Namespace and Node (src/api/cluster-objects.ts: names, uids, labels, the
 * namespaces' annotations, the nodes' taints; a real Node is 19 KB of JSON, of which a few hundred
 * bytes are kept), cut out as each object arrives, from a list page or a watch event alike. The
 * list is read in pages (`limit` and `continue`, src/kube/paged-list.ts, as client-go's reflector
 * pages its lists), each page item by item as it arrives, with the fields no projection keeps
 * left unparsed (src/kube/list-items.ts), as plain JSON rather than through the typed client,
 * which built model objects of every field of every object of one unpaged list: 5,000 Nodes were
 * 97 MiB of JSON in one response and 780 MiB of RSS before a review was served (bench/RESULTS.md,
 * "Memory against the size of the cluster"). The library's ListWatch is kept for
 * what it does well (the cache, the relist on 410 Gone that reconciles deletions, the watch from
 * the list's resourceVersion, bookmarks); its list is this paged one, and its watch events pass
 * through the projection before ListWatch stores them. Watches ask for bookmarks
 * (`allowWatchBookmarks`), so that a re-watch after a quiet spell resumes from a recent
 * resourceVersion instead of one etcd has compacted, which would cost a relist of every Node.
 */
import { ListWatch, V1ListMeta, Watch } from '@kubernetes/client-node';
import type { KubeConfig, KubernetesListObject, KubernetesObject } from '@kubernetes/client-node';
import type { ClusterFacts } from '../admission/cluster-facts.js';
import { namespaceAsRead, nodeAsRead, runtimeClassAsRead, unreadFields } from '../api/cluster-objects.js';
import type { Namespace, Node, RuntimeClass } from '../api/types.js';
import { createApiRequest, describeFailure, type ApiRequest } from './api-requests.js';
import type { KubeLogger } from './kube-logger.js';
import { defaultMaxRestarts, listInPages } from './paged-list.js';

export interface RestartBackoff {
  /** Delay ceiling of the first restart after a failure. */
  initialMs: number;
  /** The ceiling stops doubling here. */
  maxMs: number;
  /** A watch that ran this long without failing counts as healthy: the next failure starts over at initialMs. */
  resetAfterMs: number;
}

/**
 * client-go's reflector backoff (tools/cache/reflector.go: 800 ms initial, ×2, 30 s cap, reset
 * after 2 min), rounded to 1 s initial:
 * - 1 s: a watch blip (an apiserver rolling restart behind its load balancer, a reset connection)
 *   typically clears within a second, so the cache is stale for about that long.
 * - ×2 up to 30 s: 1, 2, 4, 8, 16, 30 — the cap is reached after 5 failures (~31 s into an
 *   outage). From then on each informer costs the apiserver at most one request per 15–30 s per
 *   replica (2 informers × ≥2 replicas: well under 1 QPS, client-go's stated goal), and the cache
 *   catches up at most 30 s after the apiserver is back.
 * - 2 min: a watch that survived that long was healthy; the next blip deserves a fast retry again.
 */
const defaultRestartBackoff: Readonly<RestartBackoff> = { initialMs: 1_000, maxMs: 30_000, resetAfterMs: 120_000 };

/**
 * The delay before restart number `attempt` (0-based): a ceiling of initialMs·2^attempt capped
 * at maxMs, and "equal jitter" below it — half fixed, half uniformly random (`random` in [0, 1)).
 * The jitter spreads the reconnects of all replicas (and both informers) after an apiserver
 * restart, which would otherwise arrive in lockstep; keeping half fixed keeps the backoff a
 * backoff; staying under the ceiling keeps maxMs a true maximum.
 */
export function restartDelayMs(attempt: number, backoff: Pick<RestartBackoff, 'initialMs' | 'maxMs'>, random: number): number {
  const ceiling = Math.min(backoff.maxMs, backoff.initialMs * 2 ** attempt);
  return ceiling / 2 + (random * ceiling) / 2;
}

export interface WatchTimeout {
  /** Each watch asks the server for `timeoutSeconds` drawn from [minSeconds, 2·minSeconds). */
  minSeconds: number;
  /** How long past its timeoutSeconds a watch may stay open before it is aborted here. */
  graceMs: number;
}

/**
 * - minSeconds 300: client-go's reflector uses minWatchTimeout = 5 min and
 *   `timeoutSeconds = min·(1 + rand)`, so that watches end (and re-watch cheaply from their
 *   resourceVersion) spread over time rather than all at once, and a watch on a connection that
 *   died silently is replaced within 10 minutes.
 * - graceMs 30 s: the server ends a watch on time unless the connection is dead; 30 s covers the
 *   latency of the closing chunk on a loaded apiserver with a wide margin.
 */
const defaultWatchTimeout: Readonly<WatchTimeout> = { minSeconds: 300, graceMs: 30_000 };

export interface ListPaging {
  /** Items per page (`limit`) of each resource's list. */
  readonly pageSize: Readonly<Record<Resource, number>>;
  /** A page whose body is longer is asked for again with half the limit (src/kube/paged-list.ts). */
  readonly maxPageBytes: number;
}

/**
 * - 500 a page for both, client-go's pager default: a page is read item by item
 *   (src/kube/list-items.ts) with a Node's status, managedFields and annotations left unparsed,
 *   so what a page costs is its items' kept parts, not its size: 5,000 real Nodes (19 KB each,
 *   about 10 MB a page) are 10 requests, 10,000 Namespaces 20.
 * - maxPageBytes 64 MiB: a bound on a runaway body, not on memory (a page is never held): 500
 *   Nodes of 128 KB, seven times a real one, before a page is asked for again in halves, down
 *   to one object read alone with the largest bound one object can need (paged-list.ts).
 */
const defaultPaging: ListPaging = { pageSize: { namespaces: 500, nodes: 500, runtimeclasses: 500 }, maxPageBytes: 64 * 1024 * 1024 };

/**
 * 5 s: a read of a Namespace or Node the cache lacks is made for a review, and the API server waits
 * at most the webhook's timeoutSeconds (5 in deploy/) for that review's answer; a read that takes
 * longer answers nobody, and holds the review in memory meanwhile.
 */
const liveReadTimeoutMs = 5_000;

export interface InformerFacts extends ClusterFacts {
  /** Whether each cache has completed its first list (readiness detail for /readyz). */
  syncState(): { namespaces: boolean; nodes: boolean; runtimeclasses: boolean };
  /** How many times an informer was restarted after a failure (for /metrics). */
  restarts(): number;
}

export interface StartInformersOptions {
  kubeConfig: KubeConfig;
  logger: KubeLogger;
  /** Defaults to defaultRestartBackoff; tests pass milliseconds. */
  backoff?: Partial<RestartBackoff>;
  /** Milliseconds since the epoch; defaults to Date.now. Only used for the backoff reset. */
  now?: () => number;
  /** Uniform in [0, 1); defaults to Math.random. Jitter for restarts and watch timeouts. */
  random?: () => number;
  /** Defaults to defaultWatchTimeout; tests pass seconds. */
  watchTimeout?: WatchTimeout;
  /** Defaults to defaultPaging; tests pass small pages. */
  paging?: Partial<ListPaging>;
}

/**
 * Starts the Namespace and Node informers and returns at once; the caches fill in the
 * background. `isSynced()` turns true when BOTH first lists have completed and stays true
 * afterwards, through watch failures and restarts: decisions keep being made from the cache
 * meanwhile, so a watch blip should not take every replica out of the Service at once (which a
 * flapping /readyz would do, and which would turn a short watch outage into a webhook outage
 * where `failurePolicy` decides every pod).
 *
 * `getNamespace` and `readNode` answer from the cache; a name the cache lacks (a namespace created
 * a moment ago, a node that registered before its ADDED event arrived or during a watch outage, or
 * any name before the first sync) is read once from the API per call, with concurrent calls for
 * the same name sharing one request. 404 → undefined; other failures reject.
 */
export function startInformers(options: StartInformersOptions): InformerFacts {
  const backoff: RestartBackoff = { ...defaultRestartBackoff, ...options.backoff };
  const shared: SharedSettings = {
    kubeConfig: options.kubeConfig,
    logger: options.logger,
    backoff,
    now: options.now ?? Date.now,
    random: options.random ?? Math.random,
    watchTimeout: options.watchTimeout ?? defaultWatchTimeout,
  };
  const paging: ListPaging = { ...defaultPaging, ...options.paging };
  const request = createApiRequest(options.kubeConfig);
  const liveRequest = createApiRequest(options.kubeConfig, { timeoutMs: liveReadTimeoutMs });

  const namespaces = new ResourceInformer('namespaces', shared, () => listAsRead(request, 'namespaces', paging));
  const nodes = new ResourceInformer('nodes', shared, () => listAsRead(request, 'nodes', paging));
  // RuntimeClasses are few (one per runtime handler) and change rarely; the cache alone answers,
  // since they only explain a refusal (ClusterFacts.readRuntimeClass).
  const runtimeClasses = new ResourceInformer('runtimeclasses', shared, () => listAsRead(request, 'runtimeclasses', paging));

  const readNamespace = liveReader<Namespace>('Namespace', liveRequest, 'namespaces');
  const readNode = liveReader<Node>('Node', liveRequest, 'nodes');

  namespaces.start();
  nodes.start();
  runtimeClasses.start();

  return {
    getNamespace(name) {
      const cached = namespaces.get(name);
      return cached !== undefined ? Promise.resolve(cached as unknown as Namespace) : readNamespace(name);
    },
    getNode: (name) => nodes.get(name) as unknown as Node | undefined,
    readNode(name) {
      const cached = nodes.get(name);
      return cached !== undefined ? Promise.resolve(cached as unknown as Node) : readNode(name);
    },
    listNodes: () => nodes.list() as unknown as readonly Node[],
    knowsNodes: true,
    readRuntimeClass: (name) => Promise.resolve(runtimeClasses.get(name) as unknown as RuntimeClass | undefined),
    listRuntimeClasses: () => runtimeClasses.list() as unknown as readonly RuntimeClass[],
    // Not the RuntimeClasses: they only explain a refusal, so a cluster role that lacks them (an
    // install upgraded without the new RBAC rule) must not keep every replica unready; their cache
    // state shows in tolerator_cache_synced{resource="runtimeclasses"} all the same.
    isSynced: () => namespaces.synced && nodes.synced,
    syncState: () => ({ namespaces: namespaces.synced, nodes: nodes.synced, runtimeclasses: runtimeClasses.synced }),
    restarts: () => namespaces.restarts + nodes.restarts + runtimeClasses.restarts,
    async stop() {
      await Promise.all([namespaces.stop(), nodes.stop(), runtimeClasses.stop()]);
    },
  };
}

type Resource = 'namespaces' | 'nodes' | 'runtimeclasses';

/** What is kept of an object of `resource` (src/api/cluster-objects.ts). */
function asRead(resource: Resource, object: unknown): KubernetesObject | undefined {
  const kept = resource === 'namespaces' ? namespaceAsRead(object) : resource === 'nodes' ? nodeAsRead(object) : runtimeClassAsRead(object);
  return kept as KubernetesObject | undefined;
}

/** The collection's path: core/v1 for Namespaces and Nodes, node.k8s.io/v1 for RuntimeClasses. */
function resourcePath(resource: Resource): string {
  return resource === 'runtimeclasses' ? '/apis/node.k8s.io/v1/runtimeclasses' : `/api/v1/${resource}`;
}

/**
 * Every object of `resource`, listed in pages and cut down as each page arrives: only one page is
 * ever held whole. The list's resourceVersion (every page carries the first page's) is where the
 * watch starts. An object without a name (which the API server never sends) is left out.
 */
async function listAsRead(request: ApiRequest, resource: Resource, paging: ListPaging): Promise<KubernetesListObject<KubernetesObject>> {
  let items: KubernetesObject[] = [];
  let resourceVersion = '';
  await listInPages(
    request,
    resourcePath(resource),
    {
      pageSize: paging.pageSize[resource],
      maxPageBytes: paging.maxPageBytes,
      maxRestarts: defaultMaxRestarts,
      keep: (object) => asRead(resource, object),
      skipInItems: unreadFields[resource],
      // client-go's reflector does not pace its pages either: the list is what the cache waits for.
      pause: () => Promise.resolve(),
    },
    {
      onPage: (page, list) => {
        for (const object of page) items.push(object as KubernetesObject);
        resourceVersion = list.resourceVersion ?? resourceVersion;
      },
      onRestart: () => {
        items = [];
      },
    },
  );
  const metadata = new V1ListMeta();
  metadata.resourceVersion = resourceVersion;
  return { metadata, items };
}

/**
 * A live GET for an object the cache lacks, cut down as a cached one is, with concurrent calls for
 * the same name sharing one request (a burst of pods naming the same new node costs the API server
 * one read). 404 → undefined; any other failure rejects with the kind, the name and the HTTP
 * status.
 */
function liveReader<T>(kind: 'Namespace' | 'Node', request: ApiRequest, resource: Resource): (name: string) => Promise<T | undefined> {
  const pending = new Map<string, Promise<T | undefined>>();
  const readOnce = async (name: string): Promise<T | undefined> => {
    let detail: string;
    try {
      const response = await request('GET', `/api/v1/${resource}/${encodeURIComponent(name)}`);
      if (response.status === 404) return undefined;
      const kept = response.status === 200 ? asRead(resource, response.body) : undefined;
      if (kept !== undefined) return kept as unknown as T;
      detail = response.status === 200 ? 'the response is not a named object' : describeFailure(response);
    } catch (error) {
      throw new Error(`reading ${kind} "${name}" from the API server failed: ${error instanceof Error ? error.message : String(error)}`, {
        cause: error,
      });
    }
    throw new Error(`reading ${kind} "${name}" from the API server failed: ${detail}`);
  };
  return (name) => {
    let read = pending.get(name);
    if (read === undefined) {
      read = readOnce(name).finally(() => pending.delete(name));
      pending.set(name, read);
    }
    return read;
  };
}

interface SharedSettings {
  kubeConfig: KubeConfig;
  logger: KubeLogger;
  backoff: RestartBackoff;
  now: () => number;
  random: () => number;
  watchTimeout: WatchTimeout;
}

type ListFn = () => Promise<KubernetesListObject<KubernetesObject>>;

/** One ListWatch with its restart loop. The cache holds what is read of each object, in wire JSON. */
class ResourceInformer {
  synced = false;
  restarts = 0;
  private stopped = false;
  private attempt = 0;
  private lastFailureAt: number | undefined;
  private restartTimer: NodeJS.Timeout | undefined;
  private readonly watch: DeadlineWatch;
  private readonly informer: ListWatch<KubernetesObject>;
  /** list()'s answer until the cache changes: a review that reads every node does not copy 5,000 of them. */
  private listed: readonly KubernetesObject[] | undefined;

  constructor(
    private readonly resource: Resource,
    private readonly settings: SharedSettings,
    list: ListFn,
  ) {
    this.watch = new DeadlineWatch(settings.kubeConfig, settings.watchTimeout, settings.random, (object) => asRead(resource, object));
    // makeInformer(kc, path, listFn) is `new ListWatch(path, new Watch(kc), listFn, false)`;
    // built by hand to pass the Watch above.
    this.informer = new ListWatch(resourcePath(resource), this.watch, () => this.listOnce(list), false);
    this.informer.on('error', (error: unknown) => {
      this.onFailure(error);
    });
    // 'change' is add, update and delete, whether from the watch or from a relist's reconciliation.
    this.informer.on('change', () => {
      this.listed = undefined;
    });
  }

  start(): void {
    this.informer.start().catch((error: unknown) => {
      this.onFailure(error);
    });
  }

  get(name: string): KubernetesObject | undefined {
    return this.informer.get(name);
  }

  list(): readonly KubernetesObject[] {
    this.listed ??= this.informer.list();
    return this.listed;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.restartTimer);
    this.restartTimer = undefined;
    this.watch.stop();
    await this.informer.stop();
  }

  private async listOnce(list: ListFn): Promise<KubernetesListObject<KubernetesObject>> {
    const result = await list();
    // Stopped while the list was in flight: fail it, so that ListWatch does not go on to open a
    // watch (it checks for stop only before listing). The resulting 'error' is ignored.
    if (this.stopped) throw new Error(`${this.resource} informer stopped`);
    if (!this.synced) {
      // ListWatch applies the items right after this promise resolves, in the same run of
      // microtasks; setImmediate runs after that run, so no reader sees "synced" with an
      // empty cache.
      setImmediate(() => {
        if (this.synced || this.stopped) return;
        this.synced = true;
        this.settings.logger.info({ resource: this.resource, objects: result.items.length }, `${this.resource} cache synced`);
      });
    }
    return result;
  }

  private onFailure(error: unknown): void {
    // ListWatch reports the abort of its own stop() as an 'error' too.
    if (this.stopped || this.restartTimer !== undefined) return;
    const now = this.settings.now();
    if (this.lastFailureAt !== undefined && now - this.lastFailureAt > this.settings.backoff.resetAfterMs) {
      this.attempt = 0;
    }
    this.lastFailureAt = now;
    const delayMs = Math.round(restartDelayMs(this.attempt, this.settings.backoff, this.settings.random()));
    this.attempt += 1;
    this.settings.logger.warn(
      { resource: this.resource, err: error, attempt: this.attempt, delayMs },
      `${this.resource} watch failed; serving from the cache and restarting in ${delayMs} ms`,
    );
    this.restartTimer = setTimeout(() => {
      this.restartTimer = undefined;
      if (this.stopped) return;
      this.restarts += 1;
      this.start();
    }, delayMs);
  }
}

/**
 * client-node's Watch plus a deadline for every watch (see the module comment), bookmarks, the
 * projection of every object an event carries before ListWatch stores it, and a stop() that also
 * aborts a watch still connecting.
 */
class DeadlineWatch extends Watch {
  private stopped = false;
  private readonly open = new Set<AbortController>();

  constructor(
    config: KubeConfig,
    private readonly timeout: WatchTimeout,
    private readonly random: () => number,
    private readonly keep: (object: unknown) => KubernetesObject | undefined,
  ) {
    super(config);
  }

  override async watch(...args: Parameters<Watch['watch']>): Promise<AbortController> {
    const [path, queryParams, callback, done] = args;
    const timeoutSeconds = Math.floor(this.timeout.minSeconds * (1 + this.random()));
    // ADDED, MODIFIED and DELETED carry an object, which is cut down here; BOOKMARK (a
    // resourceVersion only) and ERROR (a Status) pass as they are.
    const keepObjects = (phase: string, object: unknown, event: unknown): void => {
      if (phase !== 'ADDED' && phase !== 'MODIFIED' && phase !== 'DELETED') {
        callback(phase, object, event);
        return;
      }
      const kept = this.keep(object);
      if (kept !== undefined) callback(phase, kept, { type: phase, object: kept });
    };
    // Written from the done callback, which can run before super.watch returns.
    const state: { finished: boolean; controller?: AbortController; deadline?: NodeJS.Timeout } = { finished: false };
    const query = { ...queryParams, timeoutSeconds, allowWatchBookmarks: true };
    const controller = await super.watch(path, query, keepObjects, (error: unknown) => {
      state.finished = true;
      clearTimeout(state.deadline);
      if (state.controller !== undefined) this.open.delete(state.controller);
      done(error);
    });
    state.controller = controller;
    if (this.stopped) {
      controller.abort();
    } else if (!state.finished) {
      this.open.add(controller);
      state.deadline = setTimeout(
        () => {
          controller.abort();
        },
        timeoutSeconds * 1000 + this.timeout.graceMs,
      );
      // The deadline must not keep a process alive that is otherwise done.
      state.deadline.unref();
    }
    return controller;
  }

  stop(): void {
    this.stopped = true;
    for (const controller of this.open) controller.abort();
    this.open.clear();
  }
}
