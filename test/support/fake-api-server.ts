/**
 * A fake kube-apiserver for the informer and audit tests: the core/v1 list, watch and get endpoints for
 * Namespaces and Nodes, on 127.0.0.1 with an ephemeral port, answering with the wire shapes the
 * real server uses (lists with metadata.resourceVersion, chunked watch streams of one JSON event
 * per line, Status objects for errors); and the non-resource URLs `/metrics` (with the
 * `kubernetes_feature_enabled` family among others, as the real exposition orders them) and
 * `/version`, which tolerator reads its feature gates from.
 *
 * For the audit: Pods listed across namespaces in pages (`limit` and `continue`, as the API server
 * pages from etcd), continue tokens that expire (410 Gone, as after a compaction), a page cut off
 * mid-body, and a policy-report API (discovery, list by label, create, replace, delete) that is
 * served only once its CRD is "installed".
 *
 * Like the apiserver's watch cache, it keeps a log of events so that a watch from resourceVersion
 * N replays every event after N; `compact` forgets the log, after which a watch from an older
 * version is answered 410 Gone, as the real server does once etcd has compacted that revision.
 * Namespaces and Nodes are listed in pages too when the client sends `limit` (in name order, each
 * page with the first page's resourceVersion, as a paged list from etcd), and a watch that asks
 * for bookmarks (`allowWatchBookmarks=true`) gets a BOOKMARK event whenever `bookmark` is called.
 *
 * Every JSON body is written as kube-apiserver's encoder writes it: Go's encoding/json escapes
 * `<`, `>`, `&`, U+2028 and U+2029 inside strings as `\u003c` and so on (six bytes for one), so a
 * pod full of them is up to six times longer on the wire than the JSON its author sent.
 */
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { featureMetricsText, versionInfo } from './api-server-answers.js';

export type Resource = 'namespaces' | 'nodes' | 'runtimeclasses';

interface WatchEvent {
  type: 'ADDED' | 'MODIFIED' | 'DELETED';
  object: KubeObject;
  resourceVersion: number;
}

export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: { name: string; resourceVersion?: string; [key: string]: unknown };
  [key: string]: unknown;
}

/** How a watch request from a compacted (too old) resourceVersion is refused. */
export type GoneMode = 'http-410' | 'watch-error-event';

/** One request the fake server received, for assertions on what the client did. */
export interface RecordedRequest {
  resource: Resource;
  /** 'list', 'watch' or 'get'. */
  verb: 'list' | 'watch' | 'get';
  name?: string;
  resourceVersion?: string;
  timeoutSeconds?: string;
  /** A list's `limit` and `continue`, as sent. */
  limit?: string;
  continue?: string;
  /** A watch's `allowWatchBookmarks`, as sent. */
  allowWatchBookmarks?: string;
  /** The length of a list's body as written, in bytes. */
  bytes?: number;
}

interface ResourceState {
  objects: Map<string, KubeObject>;
  log: WatchEvent[];
  /** Watches from a resourceVersion below this one get 410 Gone. */
  oldestWatchable: number;
  openWatches: Set<ServerResponse>;
  /** While set, list requests wait for it to resolve (to observe "not synced yet"). */
  listGate: Promise<void> | undefined;
  /** While set, watch requests are answered with this HTTP status (an apiserver in trouble). */
  refuseWatchesWith: number | undefined;
  /** While set, get requests are answered with this HTTP status. */
  refuseGetsWith: number | undefined;
  goneMode: GoneMode;
  /** The open watches that asked for bookmarks. */
  bookmarkWatches: Set<ServerResponse>;
  /** The next this many list requests that carry a continue token are answered 410 Gone. */
  expireListContinues: number;
}

const kindOf: Record<Resource, { kind: string; listKind: string }> = {
  namespaces: { kind: 'Namespace', listKind: 'NamespaceList' },
  nodes: { kind: 'Node', listKind: 'NodeList' },
  runtimeclasses: { kind: 'RuntimeClass', listKind: 'RuntimeClassList' },
};

/** What `/metrics` answers: an exposition, a refusal, or a body written by the test (huge, slow, cut). */
export type MetricsAnswer =
  | { readonly kind: 'text'; readonly text: string }
  | { readonly kind: 'status'; readonly code: number }
  | { readonly kind: 'custom'; readonly write: (res: ServerResponse) => void };

/** What `/version` answers: a version.Info object, or a refusal. */
export type VersionAnswer = { readonly kind: 'info'; readonly info: unknown } | { readonly kind: 'status'; readonly code: number };

/** What the fake's report API stores, by `namespace/name`. */
export interface StoredReport {
  metadata: { name: string; namespace: string; labels?: Record<string, string>; resourceVersion?: string };
  [key: string]: unknown;
}

export class FakeApiServer {
  readonly requests: RecordedRequest[] = [];
  /** The non-resource paths requested, in order, with the Authorization header each carried. */
  readonly nonResourceRequests: { path: string; authorization: string | undefined }[] = [];
  private metricsAnswer: MetricsAnswer = {
    kind: 'text',
    text: featureMetricsText({ PodLevelResources: true, TaintTolerationComparisonOperators: false }),
  };
  private versionAnswer: VersionAnswer = { kind: 'info', info: versionInfo('v1.35.2') };
  /** When set, /metrics wants this bearer token and answers 403 without it (RBAC's answer). */
  private metricsToken: string | undefined;
  /** Every pod list request's query: `limit` and `continue` as sent. */
  readonly podListRequests: { limit: string | null; continue: string | null }[] = [];
  /** The namespace of every pod list of one namespace (`/api/v1/namespaces/NS/pods`). */
  readonly namespacedPodLists: string[] = [];
  /** Every request to the report API: method and path. */
  readonly reportRequests: { method: string; path: string }[] = [];
  readonly reports = new Map<string, StoredReport>();
  private readonly pods = new Map<string, KubeObject>();
  /** The pods' keys in list order, sorted once after a change (the bench lists 50,000 pods in 100 pages). */
  private sortedPodKeys: string[] | undefined;
  private expireContinues = 0;
  private cutPodPage: number | undefined;
  private hungPodPage: { index: number; sent: () => void; abandoned: () => void } | undefined;
  private podPagesServed = 0;
  private reportApi: { group: string; version: string; resource: string } | undefined;
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();
  private resourceVersion = 100;
  private readonly state: Record<Resource, ResourceState> = {
    namespaces: FakeApiServer.emptyState(),
    nodes: FakeApiServer.emptyState(),
    runtimeclasses: FakeApiServer.emptyState(),
  };

  private constructor() {
    this.server = createServer((req, res) => {
      this.handle(req, res).catch((error: unknown) => {
        res.destroy(error instanceof Error ? error : new Error(String(error)));
      });
    });
    this.server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
  }

  static async start(): Promise<FakeApiServer> {
    const fake = new FakeApiServer();
    await new Promise<void>((resolve) => fake.server.listen(0, '127.0.0.1', resolve));
    return fake;
  }

  private static emptyState(): ResourceState {
    return {
      objects: new Map(),
      log: [],
      oldestWatchable: 0,
      openWatches: new Set(),
      listGate: undefined,
      refuseWatchesWith: undefined,
      refuseGetsWith: undefined,
      goneMode: 'watch-error-event',
      bookmarkWatches: new Set(),
      expireListContinues: 0,
    };
  }

  get url(): string {
    const { port } = this.server.address() as AddressInfo;
    return `http://127.0.0.1:${port}`;
  }

  /** A KubeConfig pointing at this server, as a kubeconfig with no user credentials (or with `token`) would. */
  kubeConfig(token?: string): KubeConfig {
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'fake', server: this.url, skipTLSVerify: true }],
      users: [token === undefined ? { name: 'anonymous' } : { name: 'anonymous', token }],
      contexts: [{ name: 'fake', cluster: 'fake', user: 'anonymous' }],
      currentContext: 'fake',
    });
    return kc;
  }

  /** Creates or replaces an object, as a create/update through the API would. */
  put(resource: Resource, object: KubeObject): void {
    const state = this.state[resource];
    this.resourceVersion += 1;
    const stored: KubeObject = {
      apiVersion: resource === 'runtimeclasses' ? 'node.k8s.io/v1' : 'v1',
      kind: kindOf[resource].kind,
      ...object,
      metadata: {
        creationTimestamp: '2025-06-01T12:00:00Z',
        ...object.metadata,
        resourceVersion: String(this.resourceVersion),
      },
    };
    const type = state.objects.has(stored.metadata.name) ? 'MODIFIED' : 'ADDED';
    state.objects.set(stored.metadata.name, stored);
    this.publish(resource, { type, object: stored, resourceVersion: this.resourceVersion });
  }

  /**
   * Stores an object whose watch event has not been delivered yet (a namespace created a moment
   * ago): a get or a list sees it, open watches do not.
   */
  putUnwatched(resource: Resource, object: KubeObject): void {
    const openWatches = this.state[resource].openWatches;
    this.state[resource].openWatches = new Set();
    this.put(resource, object);
    this.state[resource].log.pop();
    this.state[resource].openWatches = openWatches;
  }

  delete(resource: Resource, name: string): void {
    const state = this.state[resource];
    const existing = state.objects.get(name);
    if (existing === undefined) throw new Error(`fake: no ${resource}/${name} to delete`);
    state.objects.delete(name);
    this.resourceVersion += 1;
    const object = { ...existing, metadata: { ...existing.metadata, resourceVersion: String(this.resourceVersion) } };
    this.publish(resource, { type: 'DELETED', object, resourceVersion: this.resourceVersion });
  }

  /** Forgets the event log: watches from any resourceVersion before now are 410 Gone. */
  compact(resource: Resource, goneMode: GoneMode): void {
    const state = this.state[resource];
    state.log = [];
    state.oldestWatchable = this.resourceVersion;
    state.goneMode = goneMode;
  }

  /**
   * Ends every open watch with a watch ERROR event carrying a 410 Status, then closes the stream:
   * what the apiserver sends when a watcher falls too far behind ("too old resource version").
   */
  expireWatches(resource: Resource): void {
    const state = this.state[resource];
    for (const res of state.openWatches) {
      res.end(`${JSON.stringify({ type: 'ERROR', object: goneStatus(0) })}\n`);
    }
    state.openWatches.clear();
  }

  /**
   * Sends a BOOKMARK event carrying the current resourceVersion to every open watch of `resource`
   * that asked for bookmarks, as the watch cache does about once a minute: the client learns how
   * far the resource's history has gone even when none of its objects changed.
   */
  bookmark(resource: Resource): void {
    const state = this.state[resource];
    const line = `${goJson({
      type: 'BOOKMARK',
      object: { kind: kindOf[resource].kind, apiVersion: 'v1', metadata: { resourceVersion: String(this.resourceVersion) } },
    })}\n`;
    for (const res of state.bookmarkWatches) res.write(line);
  }

  /** The next `count` list requests of `resource` that carry a continue token are answered 410 Gone. */
  expireListContinueTokens(resource: Resource, count: number): void {
    this.state[resource].expireListContinues = count;
  }

  /** Cuts the TCP connections of the open watches mid-stream, as a network failure would. */
  dropWatches(resource: Resource): void {
    const state = this.state[resource];
    for (const res of state.openWatches) res.socket?.destroy();
    state.openWatches.clear();
  }

  /** While set, watch requests get this HTTP status (undefined to accept them again). */
  refuseWatches(resource: Resource, status: number | undefined): void {
    this.state[resource].refuseWatchesWith = status;
  }

  /** While set, get requests get this HTTP status (undefined to answer them again). */
  refuseGets(resource: Resource, status: number | undefined): void {
    this.state[resource].refuseGetsWith = status;
  }

  /** Holds list requests until the returned function is called. */
  holdLists(resource: Resource): () => void {
    let release = (): void => undefined;
    this.state[resource].listGate = new Promise<void>((resolve) => {
      release = resolve;
    });
    return () => {
      this.state[resource].listGate = undefined;
      release();
    };
  }

  /** What `/metrics` answers from now on. */
  answerMetrics(answer: MetricsAnswer): void {
    this.metricsAnswer = answer;
  }

  /** `/metrics` with these gates in its kubernetes_feature_enabled family (1 on, 0 off, or a raw value). */
  reportFeatureGates(gates: Readonly<Record<string, boolean | string>>): void {
    this.metricsAnswer = { kind: 'text', text: featureMetricsText(gates) };
  }

  /** What `/version` answers from now on. */
  answerVersion(answer: VersionAnswer): void {
    this.versionAnswer = answer;
  }

  /** Requires `Authorization: Bearer <token>` on /metrics (403 otherwise); undefined lifts it. */
  requireMetricsToken(token: string | undefined): void {
    this.metricsToken = token;
  }

  openWatchCount(resource: Resource): number {
    return this.state[resource].openWatches.size;
  }

  count(filter: Partial<RecordedRequest>): number {
    return this.requests.filter((request) =>
      Object.entries(filter).every(([key, value]) => request[key as keyof RecordedRequest] === value),
    ).length;
  }

  async close(): Promise<void> {
    for (const state of Object.values(this.state)) {
      state.openWatches.clear();
      state.bookmarkWatches.clear();
    }
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve, reject) => {
      this.server.close((error) => {
        if (error) reject(error);
        else resolve();
      });
    });
  }

  private serveMetrics(req: IncomingMessage, res: ServerResponse): void {
    if (this.metricsToken !== undefined && req.headers.authorization !== `Bearer ${this.metricsToken}`) {
      sendText(res, 403, 'forbidden: User "system:anonymous" cannot get path "/metrics"');
      return;
    }
    const answer = this.metricsAnswer;
    if (answer.kind === 'status') sendText(res, answer.code, `refused by test with ${answer.code}`);
    else if (answer.kind === 'text') sendText(res, 200, answer.text);
    else answer.write(res);
  }

  private serveVersion(res: ServerResponse): void {
    const answer = this.versionAnswer;
    if (answer.kind === 'status') sendJson(res, answer.code, status(answer.code, 'Forbidden', 'refused by test'));
    else sendJson(res, 200, answer.info);
  }

  private listPods(url: URL, res: ServerResponse, namespace?: string): void {
    const limit = url.searchParams.get('limit');
    const token = url.searchParams.get('continue');
    this.podListRequests.push({ limit, continue: token });
    if (token !== null && this.expireContinues > 0) {
      this.expireContinues -= 1;
      sendJson(
        res,
        410,
        status(
          410,
          'Expired',
          'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.',
        ),
      );
      return;
    }
    const from: ContinueToken =
      token === null
        ? { rv: this.resourceVersion, after: '' }
        : (JSON.parse(Buffer.from(token, 'base64').toString('utf8')) as ContinueToken);
    this.sortedPodKeys ??= [...this.pods.keys()].sort();
    const sorted = namespace === undefined ? this.sortedPodKeys : this.sortedPodKeys.filter((key) => key.startsWith(`${namespace}/`));
    if (namespace !== undefined) this.namespacedPodLists.push(namespace);
    // The first key after the token's: a binary search, so each page costs its own size.
    let low = 0;
    let high = sorted.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if ((sorted[middle] ?? '') <= from.after) low = middle + 1;
      else high = middle;
    }
    const size = limit === null ? sorted.length : Number(limit);
    const page = sorted.slice(low, low + size);
    const last = page[page.length - 1];
    const more = low + size < sorted.length && last !== undefined;
    const body = goJson({
      apiVersion: 'v1',
      kind: 'PodList',
      metadata: {
        resourceVersion: String(from.rv),
        ...(more ? { continue: Buffer.from(JSON.stringify({ rv: from.rv, after: last } satisfies ContinueToken)).toString('base64') } : {}),
      },
      items: page.map((key) => this.pods.get(key)),
    });
    const index = this.podPagesServed;
    this.podPagesServed += 1;
    const hung = this.hungPodPage;
    if (index === hung?.index) {
      this.hungPodPage = undefined;
      // Headers promise the whole body; half of it is sent, then nothing, the connection held open
      // until the client gives up on it.
      res.on('close', hung.abandoned);
      res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
      res.write(body.slice(0, Math.floor(body.length / 2)), hung.sent);
      return;
    }
    if (index === this.cutPodPage) {
      // Headers promise the whole body; half of it is sent, then the connection is cut.
      res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
      res.write(body.slice(0, Math.floor(body.length / 2)), () => res.socket?.destroy());
      return;
    }
    sendJsonText(res, 200, body);
  }

  private async handleReports(req: IncomingMessage, url: URL, res: ServerResponse): Promise<void> {
    const method = req.method ?? 'GET';
    this.reportRequests.push({ method, path: `${url.pathname}${url.search}` });
    const api = this.reportApi;
    const base = api === undefined ? undefined : `/apis/${api.group}/${api.version}`;
    if (api === undefined || base === undefined || !url.pathname.startsWith(base)) {
      sendJson(res, 404, status(404, 'NotFound', 'the server could not find the requested resource'));
      return;
    }
    if (url.pathname === base) {
      sendJson(res, 200, {
        kind: 'APIResourceList',
        groupVersion: `${api.group}/${api.version}`,
        resources: [{ name: api.resource, namespaced: true }],
      });
      return;
    }
    if (url.pathname === `${base}/${api.resource}` && method === 'GET') {
      const selector = url.searchParams.get('labelSelector') ?? '';
      const wanted = selector === '' ? [] : selector.split(',').map((pair) => pair.split('=') as [string, string]);
      const items = [...this.reports.values()].filter((report) => wanted.every(([key, value]) => report.metadata.labels?.[key] === value));
      sendJson(res, 200, { apiVersion: `${api.group}/${api.version}`, kind: 'List', metadata: {}, items });
      return;
    }
    const match = new RegExp(`^${base}/namespaces/([^/]+)/${api.resource}(?:/([^/]+))?$`).exec(url.pathname);
    if (match === null) {
      sendJson(res, 404, status(404, 'NotFound', 'no such path'));
      return;
    }
    const namespace = decodeURIComponent(match[1] ?? '');
    const name = match[2] === undefined ? undefined : decodeURIComponent(match[2]);
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = chunks.length === 0 ? undefined : (JSON.parse(Buffer.concat(chunks).toString('utf8')) as StoredReport);
    if (method === 'POST' && name === undefined && body !== undefined) {
      const key = `${namespace}/${body.metadata.name}`;
      if (this.reports.has(key)) {
        sendJson(res, 409, status(409, 'AlreadyExists', `${key} already exists`));
        return;
      }
      this.resourceVersion += 1;
      const stored = { ...body, metadata: { ...body.metadata, namespace, resourceVersion: String(this.resourceVersion) } };
      this.reports.set(key, stored);
      sendJson(res, 201, stored);
      return;
    }
    const key = `${namespace}/${name ?? ''}`;
    const existing = this.reports.get(key);
    if (method === 'PUT' && body !== undefined) {
      if (existing === undefined) {
        sendJson(res, 404, status(404, 'NotFound', `${key} not found`));
        return;
      }
      if (body.metadata.resourceVersion !== existing.metadata.resourceVersion) {
        sendJson(res, 409, status(409, 'Conflict', 'the object has been modified'));
        return;
      }
      this.resourceVersion += 1;
      const stored = { ...body, metadata: { ...body.metadata, namespace, resourceVersion: String(this.resourceVersion) } };
      this.reports.set(key, stored);
      sendJson(res, 200, stored);
      return;
    }
    if (method === 'DELETE') {
      if (existing === undefined) {
        sendJson(res, 404, status(404, 'NotFound', `${key} not found`));
        return;
      }
      this.reports.delete(key);
      sendJson(res, 200, status(200, '', 'deleted'));
      return;
    }
    sendJson(res, 405, status(405, 'MethodNotAllowed', method));
  }

  private publish(resource: Resource, event: WatchEvent): void {
    const state = this.state[resource];
    state.log.push(event);
    for (const res of state.openWatches) res.write(watchLine(event));
  }

  /** Stores a pod (its metadata.namespace and name identify it). */
  putPod(pod: KubeObject): void {
    this.resourceVersion += 1;
    const namespace = typeof pod.metadata.namespace === 'string' ? pod.metadata.namespace : 'default';
    this.sortedPodKeys = undefined;
    this.pods.set(`${namespace}/${pod.metadata.name}`, {
      apiVersion: 'v1',
      kind: 'Pod',
      ...pod,
      metadata: { ...pod.metadata, namespace, resourceVersion: String(this.resourceVersion) },
    });
  }

  /** Deletes a pod (by namespace and name). */
  deletePod(namespace: string, name: string): void {
    this.resourceVersion += 1;
    this.sortedPodKeys = undefined;
    this.pods.delete(`${namespace}/${name}`);
  }

  /** The next `count` pod list requests that carry a continue token are answered 410 Gone. */
  expireContinueTokens(count: number): void {
    this.expireContinues = count;
  }

  /** Pod pages served so far (a 410 answer is not a page). */
  get podPagesServedCount(): number {
    return this.podPagesServed;
  }

  /** The pod page with this 0-based index (counted over the server's life, see podPagesServedCount) is cut off mid-body. */
  cutPodListAtPage(index: number | undefined): void {
    this.cutPodPage = index;
  }

  /**
   * The pod page with this 0-based index is sent in part and then nothing more, its connection
   * held open: a page that takes the client's whole request timeout to fail. `sent` resolves
   * once the part is written, `abandoned` once the client closes the connection. Once: the pages
   * after it are served whole.
   */
  hangPodListAtPage(index: number): { sent: Promise<void>; abandoned: Promise<void> } {
    let markSent = (): void => undefined;
    let markAbandoned = (): void => undefined;
    const sent = new Promise<void>((resolve) => {
      markSent = resolve;
    });
    const abandoned = new Promise<void>((resolve) => {
      markAbandoned = resolve;
    });
    this.hungPodPage = {
      index,
      sent: () => {
        markSent();
      },
      abandoned: () => {
        markAbandoned();
      },
    };
    return { sent, abandoned };
  }

  /**
   * Karpenter's NodePools (`GET /apis/karpenter.sh/v1/nodepools`, one page whatever the limit):
   * undefined serves no such API (404, as without its CRD); a status other than 200 answers every
   * list with it (403: a caller without the grant).
   */
  karpenterNodePools: { readonly status: number; readonly items: readonly KubeObject[] } | undefined;

  /**
   * DRA ResourceClaims (`GET /apis/resource.k8s.io/v1/resourceclaims`, one page whatever the
   * limit): undefined serves no such API (404); a status other than 200 answers every list with it.
   */
  resourceClaims: { readonly status: number; readonly items: readonly KubeObject[] } | undefined;
  /** Every request for the ResourceClaims' list: its path and query. */
  readonly resourceClaimRequests: string[] = [];

  /** Objects served at their own path (ReplicaSets, Jobs: `GET /apis/apps/v1/namespaces/NS/replicasets/NAME`). */
  readonly objects = new Map<string, KubeObject>();
  /** Every GET of a ReplicaSet or Job, by path. */
  readonly ownerReads: string[] = [];
  /** Stores an apps/v1 ReplicaSet or batch/v1 Job at its path. */
  putOwned(object: KubeObject & { metadata: { namespace: string } }): void {
    const resource = object.kind === 'ReplicaSet' ? 'apps/v1/namespaces/%/replicasets' : 'batch/v1/namespaces/%/jobs';
    this.objects.set(`/apis/${resource.replace('%', object.metadata.namespace)}/${object.metadata.name}`, object);
  }

  /** Leases by `namespace/name`, as coordination.k8s.io/v1 stores them (resourceVersion checked on update). */
  readonly leases = new Map<string, KubeObject>();
  /** Every request to the Lease API: method, path and the holder a write carried. */
  readonly leaseRequests: { method: string; path: string; holder?: string }[] = [];
  private leaseFailure: number | undefined;
  /** Every Lease request is answered with this status (a Status body) until set back to undefined. */
  failLeases(code: number | undefined): void {
    this.leaseFailure = code;
  }

  private async handleLeases(req: IncomingMessage, url: URL, res: ServerResponse): Promise<void> {
    const method = req.method ?? 'GET';
    const match = /^\/apis\/coordination\.k8s\.io\/v1\/namespaces\/([^/]+)\/leases(?:\/([^/]+))?$/.exec(url.pathname);
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = chunks.length === 0 ? undefined : (JSON.parse(Buffer.concat(chunks).toString('utf8')) as KubeObject);
    const holder = (body?.spec as { holderIdentity?: string } | undefined)?.holderIdentity;
    this.leaseRequests.push({ method, path: url.pathname, ...(holder === undefined ? {} : { holder }) });
    if (this.leaseFailure !== undefined) {
      sendJson(res, this.leaseFailure, status(this.leaseFailure, 'InternalError', 'leases unavailable'));
      return;
    }
    if (match === null) {
      sendJson(res, 404, status(404, 'NotFound', 'no such path'));
      return;
    }
    const namespace = decodeURIComponent(match[1] ?? '');
    const name = match[2] === undefined ? body?.metadata.name : decodeURIComponent(match[2]);
    const key = `${namespace}/${name ?? ''}`;
    const existing = this.leases.get(key);
    const store = (code: number): void => {
      this.resourceVersion += 1;
      const stored = { ...body, metadata: { ...body!.metadata, namespace, resourceVersion: String(this.resourceVersion) } } as KubeObject;
      this.leases.set(key, stored);
      sendJson(res, code, stored);
    };
    if (method === 'GET' && match[2] !== undefined) {
      if (existing === undefined) sendJson(res, 404, status(404, 'NotFound', `leases "${name ?? ''}" not found`));
      else sendJson(res, 200, existing);
    } else if (method === 'POST' && match[2] === undefined && body !== undefined) {
      if (existing !== undefined) sendJson(res, 409, status(409, 'AlreadyExists', `leases "${name ?? ''}" already exists`));
      else store(201);
    } else if (method === 'PUT' && body !== undefined) {
      if (existing === undefined) sendJson(res, 404, status(404, 'NotFound', `leases "${name ?? ''}" not found`));
      else if (body.metadata.resourceVersion !== existing.metadata.resourceVersion) {
        sendJson(
          res,
          409,
          status(409, 'Conflict', 'the object has been modified; please apply your changes to the latest version and try again'),
        );
      } else store(200);
    } else {
      sendJson(res, 405, status(405, 'MethodNotAllowed', method));
    }
  }

  /** Serves the report API of `group/version` (discovery lists `resource`), as an installed CRD would. */
  installReportCrd(group: string, version: string, resource: string): void {
    this.reportApi = { group, version, resource };
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://fake');
    if (req.method === 'GET' && (url.pathname === '/metrics' || url.pathname === '/version')) {
      this.nonResourceRequests.push({ path: url.pathname, authorization: req.headers.authorization });
      if (url.pathname === '/metrics') this.serveMetrics(req, res);
      else this.serveVersion(res);
      return;
    }
    if (url.pathname === '/api/v1/pods' && req.method === 'GET') {
      this.listPods(url, res);
      return;
    }
    if (url.pathname.startsWith('/apis/coordination.k8s.io/v1/')) {
      await this.handleLeases(req, url, res);
      return;
    }
    if (url.pathname === '/apis/resource.k8s.io/v1/resourceclaims' && req.method === 'GET') {
      this.resourceClaimRequests.push(`${url.pathname}${url.search}`);
      const served = this.resourceClaims;
      if (served === undefined) sendJson(res, 404, status(404, 'NotFound', 'the server could not find the requested resource'));
      else if (served.status !== 200)
        sendJson(res, served.status, status(served.status, 'Forbidden', 'resourceclaims.resource.k8s.io is forbidden'));
      else
        sendJson(res, 200, {
          apiVersion: 'resource.k8s.io/v1',
          kind: 'ResourceClaimList',
          metadata: { resourceVersion: '1' },
          items: served.items,
        });
      return;
    }
    if (url.pathname === '/apis/karpenter.sh/v1/nodepools' && req.method === 'GET') {
      const served = this.karpenterNodePools;
      if (served === undefined) sendJson(res, 404, status(404, 'NotFound', 'the server could not find the requested resource'));
      else if (served.status !== 200)
        sendJson(res, served.status, status(served.status, 'Forbidden', 'nodepools.karpenter.sh is forbidden'));
      else
        sendJson(res, 200, {
          apiVersion: 'karpenter.sh/v1',
          kind: 'NodePoolList',
          metadata: { resourceVersion: '1' },
          items: served.items,
        });
      return;
    }
    const owned = /^\/apis\/(apps\/v1|batch\/v1)\/namespaces\/([^/]+)\/(replicasets|jobs)\/([^/]+)$/.exec(url.pathname);
    if (owned !== null && req.method === 'GET') {
      this.ownerReads.push(url.pathname);
      const object = this.objects.get(url.pathname);
      if (object === undefined) sendJson(res, 404, status(404, 'NotFound', `${url.pathname} not found`));
      else sendJson(res, 200, object);
      return;
    }
    if (url.pathname.startsWith('/apis/') && !url.pathname.startsWith('/apis/node.k8s.io/v1/runtimeclasses')) {
      await this.handleReports(req, url, res);
      return;
    }
    const namespacedPods = /^\/api\/v1\/namespaces\/([^/]+)\/pods$/.exec(url.pathname);
    if (namespacedPods !== null && req.method === 'GET') {
      this.listPods(url, res, decodeURIComponent(namespacedPods[1] ?? ''));
      return;
    }
    const match = /^\/(?:api\/v1\/(namespaces|nodes)|apis\/node\.k8s\.io\/v1\/(runtimeclasses))(?:\/([^/]+))?$/.exec(url.pathname);
    if (req.method !== 'GET' || match === null) {
      sendJson(res, 404, status(404, 'NotFound', `the server could not find the requested resource`));
      return;
    }
    const resource = (match[1] ?? match[2]) as Resource;
    const name = match[3];
    const state = this.state[resource];
    const isWatch = url.searchParams.get('watch') === 'true';
    const resourceVersion = url.searchParams.get('resourceVersion') ?? undefined;
    const recorded: RecordedRequest = {
      resource,
      verb: name !== undefined ? 'get' : isWatch ? 'watch' : 'list',
      ...(name !== undefined ? { name } : {}),
      ...(resourceVersion !== undefined ? { resourceVersion } : {}),
    };
    for (const key of ['timeoutSeconds', 'limit', 'continue', 'allowWatchBookmarks'] as const) {
      const value = url.searchParams.get(key);
      if (value !== null) recorded[key] = value;
    }
    this.requests.push(recorded);

    if (name !== undefined) {
      if (state.refuseGetsWith !== undefined) {
        sendJson(res, state.refuseGetsWith, status(state.refuseGetsWith, 'InternalError', 'get refused by test'));
        return;
      }
      const object = state.objects.get(name);
      if (object === undefined) {
        sendJson(res, 404, status(404, 'NotFound', `${resource} "${name}" not found`));
      } else {
        sendJson(res, 200, object);
      }
      return;
    }

    if (!isWatch) {
      if (state.listGate !== undefined) await state.listGate;
      this.listObjects(resource, url, res, recorded);
      return;
    }

    if (state.refuseWatchesWith !== undefined) {
      sendJson(res, state.refuseWatchesWith, status(state.refuseWatchesWith, 'InternalError', 'watch refused by test'));
      return;
    }
    const from = Number(resourceVersion ?? '0');
    if (from < state.oldestWatchable) {
      if (state.goneMode === 'http-410') {
        sendJson(res, 410, goneStatus(from));
      } else {
        // The apiserver accepts the watch, then sends one ERROR event and closes the stream.
        res.writeHead(200, { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' });
        res.end(`${JSON.stringify({ type: 'ERROR', object: goneStatus(from) })}\n`);
      }
      return;
    }
    res.writeHead(200, { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' });
    res.flushHeaders();
    for (const event of state.log) {
      if (event.resourceVersion > from) res.write(watchLine(event));
    }
    state.openWatches.add(res);
    if (url.searchParams.get('allowWatchBookmarks') === 'true') state.bookmarkWatches.add(res);
    res.on('close', () => {
      state.openWatches.delete(res);
      state.bookmarkWatches.delete(res);
    });
  }

  /**
   * A list of Namespaces or Nodes: whole without `limit`; with it, in name order from after the
   * continue token's name, each page carrying the resourceVersion of the list's first page and a
   * continue token while objects remain (a continue token is only valid for the list it came from).
   */
  private listObjects(resource: Resource, url: URL, res: ServerResponse, recorded: RecordedRequest): void {
    const state = this.state[resource];
    const limit = url.searchParams.get('limit');
    const token = url.searchParams.get('continue');
    if (token !== null && state.expireListContinues > 0) {
      state.expireListContinues -= 1;
      sendJson(res, 410, status(410, 'Expired', 'The provided continue parameter is too old to display a consistent list result.'));
      return;
    }
    const from: ContinueToken =
      token === null
        ? { rv: this.resourceVersion, after: '' }
        : (JSON.parse(Buffer.from(token, 'base64').toString('utf8')) as ContinueToken);
    let objects = [...state.objects.values()];
    let next: string | undefined;
    if (limit !== null) {
      const names = [...state.objects.keys()].filter((key) => key > from.after).sort();
      const page = names.slice(0, Number(limit));
      const last = page[page.length - 1];
      if (names.length > page.length && last !== undefined) {
        next = Buffer.from(JSON.stringify({ rv: from.rv, after: last } satisfies ContinueToken)).toString('base64');
      }
      objects = page.flatMap((key) => state.objects.get(key) ?? []);
    }
    const text = goJson({
      apiVersion: resource === 'runtimeclasses' ? 'node.k8s.io/v1' : 'v1',
      kind: kindOf[resource].listKind,
      metadata: { resourceVersion: String(from.rv), ...(next === undefined ? {} : { continue: next }) },
      items: objects,
    });
    recorded.bytes = Buffer.byteLength(text);
    sendJsonText(res, 200, text);
  }
}

interface ContinueToken {
  /** The resourceVersion of the list's first page: a token older than a compaction expires. */
  rv: number;
  /** The last key served. */
  after: string;
}

function watchLine(event: WatchEvent): string {
  return `${goJson({ type: event.type, object: event.object })}\n`;
}

/**
 * JSON as Go's encoding/json writes it (json.Marshal, HTMLEscape on): `<`, `>` and `&` as
 * `\u003c`, `\u003e`, `\u0026`, and U+2028, U+2029 as `\u2028`, `\u2029`. They only ever occur
 * inside strings, so replacing them in JSON.stringify's text escapes exactly those.
 */
export function goJson(value: unknown): string {
  return JSON.stringify(value).replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

function status(code: number, reason: string, message: string): object {
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code };
}

function goneStatus(from: number): object {
  return status(410, 'Expired', `too old resource version: ${from}`);
}

function sendText(res: ServerResponse, code: number, text: string): void {
  res.writeHead(code, { 'Content-Type': 'text/plain; version=0.0.4; charset=utf-8', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

function sendJson(res: ServerResponse, code: number, body: unknown): void {
  sendJsonText(res, code, goJson(body));
}

function sendJsonText(res: ServerResponse, code: number, text: string): void {
  res.writeHead(code, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}
