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
 */
import { CoreV1Api, ListWatch, Watch } from '@kubernetes/client-node';
import type { KubeConfig, KubernetesListObject, KubernetesObject } from '@kubernetes/client-node';
import type { ClusterFacts } from '../admission/cluster-facts.js';
import type { Namespace, Node } from '../api/types.js';
import type { KubeLogger } from './kube-logger.js';

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

export interface InformerFacts extends ClusterFacts {
  /** Whether each cache has completed its first list (readiness detail for /readyz). */
  syncState(): { namespaces: boolean; nodes: boolean };
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
  const api = options.kubeConfig.makeApiClient(CoreV1Api);

  const namespaces = new ResourceInformer('namespaces', '/api/v1/namespaces', shared, async () => {
    const list = await api.listNamespace();
    return { metadata: list.metadata, items: list.items.map((item) => toWire(item)) };
  });
  const nodes = new ResourceInformer('nodes', '/api/v1/nodes', shared, async () => {
    const list = await api.listNode();
    return { metadata: list.metadata, items: list.items.map((item) => toWire(item)) };
  });

  const readNamespace = liveReader<Namespace>(
    'Namespace',
    async (name) => toWire(await api.readNamespace({ name })) as unknown as Namespace,
  );
  const readNode = liveReader<Node>('Node', async (name) => toWire(await api.readNode({ name })) as unknown as Node);

  namespaces.start();
  nodes.start();

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
    isSynced: () => namespaces.synced && nodes.synced,
    syncState: () => ({ namespaces: namespaces.synced, nodes: nodes.synced }),
    restarts: () => namespaces.restarts + nodes.restarts,
    async stop() {
      await Promise.all([namespaces.stop(), nodes.stop()]);
    },
  };
}

/**
 * A live GET for an object the cache lacks, with concurrent calls for the same name sharing one
 * request (a burst of pods naming the same new node costs the API server one read). 404 →
 * undefined; any other failure rejects with the kind, the name and the HTTP status.
 */
function liveReader<T>(kind: 'Namespace' | 'Node', read: (name: string) => Promise<T>): (name: string) => Promise<T | undefined> {
  const pending = new Map<string, Promise<T | undefined>>();
  const readOnce = async (name: string): Promise<T | undefined> => {
    try {
      return await read(name);
    } catch (error) {
      const status = httpStatusOf(error);
      if (status === 404) return undefined;
      const detail = status !== undefined ? `HTTP ${status}` : error instanceof Error ? error.message : String(error);
      throw new Error(`reading ${kind} "${name}" from the API server failed: ${detail}`, { cause: error });
    }
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

/** One ListWatch with its restart loop. The cache holds wire JSON (see toWire). */
class ResourceInformer {
  synced = false;
  restarts = 0;
  private stopped = false;
  private attempt = 0;
  private lastFailureAt: number | undefined;
  private restartTimer: NodeJS.Timeout | undefined;
  private readonly watch: DeadlineWatch;
  private readonly informer: ListWatch<KubernetesObject>;

  constructor(
    private readonly resource: 'namespaces' | 'nodes',
    path: string,
    private readonly settings: SharedSettings,
    list: ListFn,
  ) {
    this.watch = new DeadlineWatch(settings.kubeConfig, settings.watchTimeout, settings.random);
    // makeInformer(kc, path, listFn) is `new ListWatch(path, new Watch(kc), listFn, false)`;
    // built by hand to pass the Watch above.
    this.informer = new ListWatch(path, this.watch, () => this.listOnce(list), false);
    this.informer.on('error', (error: unknown) => {
      this.onFailure(error);
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
    return this.informer.list();
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
 * client-node's Watch plus a deadline for every watch (see the module comment) and a stop()
 * that also aborts a watch still connecting.
 */
class DeadlineWatch extends Watch {
  private stopped = false;
  private readonly open = new Set<AbortController>();

  constructor(
    config: KubeConfig,
    private readonly timeout: WatchTimeout,
    private readonly random: () => number,
  ) {
    super(config);
  }

  override async watch(...args: Parameters<Watch['watch']>): Promise<AbortController> {
    const [path, queryParams, callback, done] = args;
    const timeoutSeconds = Math.floor(this.timeout.minSeconds * (1 + this.random()));
    // Written from the done callback, which can run before super.watch returns.
    const state: { finished: boolean; controller?: AbortController; deadline?: NodeJS.Timeout } = { finished: false };
    const controller = await super.watch(path, { ...queryParams, timeoutSeconds }, callback, (error: unknown) => {
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

/**
 * The typed client deserialises list and get responses into model classes (timestamps become
 * Date objects), while watch events arrive as parsed JSON; a JSON round trip gives every cached
 * object the wire form the admission pipeline (and CEL's `namespaceObject`) expects, whichever
 * way it came in (Date.toJSON writes the RFC 3339 form, with milliseconds). client-node's own
 * ObjectSerializer would do the same but is not exported from the package. Two caveats, harmless
 * for what tolerator reads (metadata and Node spec.taints): the models drop fields unknown to
 * client-node 1.4, and they rename fields that are reserved words (`_continue`), none of which
 * occur in Namespace or Node.
 */
function toWire(object: object): KubernetesObject {
  return JSON.parse(JSON.stringify(object)) as KubernetesObject;
}

/** The HTTP status of a failed client-node call: ApiException.code, or statusCode on Watch errors. */
function httpStatusOf(error: unknown): number | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const { code, statusCode } = error as { code?: unknown; statusCode?: unknown };
  if (typeof code === 'number') return code;
  return typeof statusCode === 'number' ? statusCode : undefined;
}
