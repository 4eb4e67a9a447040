/**
 * A fake kube-apiserver for the informer tests: the core/v1 list, watch and get endpoints for
 * Namespaces and Nodes, on 127.0.0.1 with an ephemeral port, answering with the wire shapes the
 * real server uses (lists with metadata.resourceVersion, chunked watch streams of one JSON event
 * per line, Status objects for errors); and the non-resource URLs `/metrics` (with the
 * `kubernetes_feature_enabled` family among others, as the real exposition orders them) and
 * `/version`, which tolerator reads its feature gates from.
 *
 * Like the apiserver's watch cache, it keeps a log of events so that a watch from resourceVersion
 * N replays every event after N; `compact` forgets the log, after which a watch from an older
 * version is answered 410 Gone, as the real server does once etcd has compacted that revision.
 */
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { featureMetricsText, versionInfo } from '../support/api-server-answers.js';

export type Resource = 'namespaces' | 'nodes';

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
}

const kindOf: Record<Resource, { kind: string; listKind: string }> = {
  namespaces: { kind: 'Namespace', listKind: 'NamespaceList' },
  nodes: { kind: 'Node', listKind: 'NodeList' },
};

/** What `/metrics` answers: an exposition, a refusal, or a body written by the test (huge, slow, cut). */
export type MetricsAnswer =
  | { readonly kind: 'text'; readonly text: string }
  | { readonly kind: 'status'; readonly code: number }
  | { readonly kind: 'custom'; readonly write: (res: ServerResponse) => void };

/** What `/version` answers: a version.Info object, or a refusal. */
export type VersionAnswer = { readonly kind: 'info'; readonly info: unknown } | { readonly kind: 'status'; readonly code: number };

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
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();
  private resourceVersion = 100;
  private readonly state: Record<Resource, ResourceState> = {
    namespaces: FakeApiServer.emptyState(),
    nodes: FakeApiServer.emptyState(),
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
      apiVersion: 'v1',
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
    for (const state of Object.values(this.state)) state.openWatches.clear();
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

  private publish(resource: Resource, event: WatchEvent): void {
    const state = this.state[resource];
    state.log.push(event);
    for (const res of state.openWatches) res.write(watchLine(event));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://fake');
    if (req.method === 'GET' && (url.pathname === '/metrics' || url.pathname === '/version')) {
      this.nonResourceRequests.push({ path: url.pathname, authorization: req.headers.authorization });
      if (url.pathname === '/metrics') this.serveMetrics(req, res);
      else this.serveVersion(res);
      return;
    }
    const match = /^\/api\/v1\/(namespaces|nodes)(?:\/([^/]+))?$/.exec(url.pathname);
    if (req.method !== 'GET' || match === null) {
      sendJson(res, 404, status(404, 'NotFound', `the server could not find the requested resource`));
      return;
    }
    const resource = match[1] as Resource;
    const name = match[2];
    const state = this.state[resource];
    const isWatch = url.searchParams.get('watch') === 'true';
    const resourceVersion = url.searchParams.get('resourceVersion') ?? undefined;
    const timeoutSeconds = url.searchParams.get('timeoutSeconds') ?? undefined;
    this.requests.push({
      resource,
      verb: name !== undefined ? 'get' : isWatch ? 'watch' : 'list',
      ...(name !== undefined ? { name } : {}),
      ...(resourceVersion !== undefined ? { resourceVersion } : {}),
      ...(timeoutSeconds !== undefined ? { timeoutSeconds } : {}),
    });

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
      sendJson(res, 200, {
        apiVersion: 'v1',
        kind: kindOf[resource].listKind,
        metadata: { resourceVersion: String(this.resourceVersion) },
        items: [...state.objects.values()],
      });
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
    res.on('close', () => state.openWatches.delete(res));
  }
}

function watchLine(event: WatchEvent): string {
  return `${JSON.stringify({ type: event.type, object: event.object })}\n`;
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
  const text = JSON.stringify(body);
  res.writeHead(code, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}
