/**
 * Plain JSON requests to the API server with a KubeConfig's credentials, for the audit: pages of
 * pods, API discovery and policy reports. client-node's typed API would convert every pod of a
 * page into its model classes and back (`toWire` in informers.ts); the audit reads the wire shape,
 * so the bytes are parsed once with JSON.parse and nothing else.
 *
 * A response is resolved only when its whole body arrived: a connection cut in the middle of a
 * body (the server going away, a proxy timing out) rejects, so half a page is never taken for a
 * page.
 */
import { request as httpRequest } from 'node:http';
import { request as httpsRequest, type RequestOptions } from 'node:https';
import { StringDecoder } from 'node:string_decoder';
import type { KubeConfig } from '@kubernetes/client-node';
import { ListItemSplitter } from './list-items.js';

export interface ApiResponse {
  readonly status: number;
  /** The parsed JSON body; undefined when the body is empty or not JSON. */
  readonly body: unknown;
}

export interface ApiRequestLimits {
  /** A response body longer than this is not read to its end: the request fails with ResponseTooLarge. */
  readonly maxBodyBytes?: number;
  /**
   * Aborting it ends the request at once, wherever it is (connecting, waiting, mid-body): the
   * promise rejects with the signal's reason (an Error, or one with it as its cause) and the
   * connection is destroyed. The periodic audit's
   * stop(), so that a shutdown does not wait out a page that is slow to arrive.
   */
  readonly signal?: AbortSignal;
  /**
   * For a list: each element of the body's top-level `items` is parsed alone as it arrives
   * (src/kube/list-items.ts) and handed to this, and the body resolved is the list without them
   * (`items: []`), so that a page is never held as one string and one parsed tree. Called only
   * while the body arrives; if the response then fails (cut off, too large), the items handed on
   * so far belong to no complete response, and the caller must drop them.
   */
  readonly onItem?: (item: unknown) => void;
  /** With onItem: paths of object keys within each item whose values are not parsed (they read as null). */
  readonly skipInItems?: readonly (readonly string[])[];
  /** The body is text (a Prometheus exposition): it resolves as the string it is, not parsed as JSON. */
  readonly text?: boolean;
}

export type ApiRequest = (
  /** PATCH sends a JSON merge patch (application/merge-patch+json). */
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE',
  path: string,
  body?: unknown,
  limits?: ApiRequestLimits,
) => Promise<ApiResponse>;

/**
 * A response body over the request's maxBodyBytes: the caller may ask for less (a smaller page).
 * `head` holds the body's first bytes (up to responseHeadBytes): a list's metadata, its continue
 * token with it, comes before its items, so a caller can step over an item it cannot hold.
 */
export class ResponseTooLarge extends Error {
  constructor(
    what: string,
    readonly maxBytes: number,
    readonly head: Buffer = Buffer.alloc(0),
  ) {
    super(`${what}: the response is more than ${maxBytes} bytes`);
  }
}

/**
 * 64 KiB of a body too large to read: a list's `metadata` (resourceVersion, a continue token of a
 * few hundred bytes) and its first item's `metadata.name` and `namespace` (ObjectMeta's first and
 * third fields, after `generateName` of at most 253 bytes) come within its first kilobyte or so,
 * as kube-apiserver writes them; 64 times that leaves room for any encoder's order of the small
 * fields, and is nothing to hold.
 */
export const responseHeadBytes = 64 * 1024;

/**
 * 60 s: kube-apiserver's own default request timeout (--request-timeout 1m), after which it ends
 * a request itself; a page that has not arrived by then will not. It bounds the whole request,
 * not only the socket's idle time: a body trickling in a byte at a time is never idle, and would
 * hold a run of the audit on one page for ever.
 */
const requestTimeoutMs = 60_000;

export interface ApiRequestOptions {
  /** The deadline of one request, from its start to the end of its body (default 60 s; tests shorten it). */
  readonly timeoutMs?: number;
}

/** Requests against the current cluster of `kubeConfig`; credentials are applied anew to each (tokens rotate). */
export function createApiRequest(kubeConfig: KubeConfig, apiOptions: ApiRequestOptions = {}): ApiRequest {
  const timeoutMs = apiOptions.timeoutMs ?? requestTimeoutMs;
  const cluster = kubeConfig.getCurrentCluster();
  if (cluster === null) throw new Error('the kubeconfig names no current cluster');
  const server = cluster.server.replace(/\/+$/, '');
  return async (method, path, body, limits = {}) => {
    const maxBodyBytes = limits.maxBodyBytes ?? Infinity;
    const { signal } = limits;
    const aborted = (): Error => {
      const reason: unknown = signal?.reason;
      return reason instanceof Error ? reason : new Error(`${method} ${path}: aborted`, { cause: reason });
    };
    const throwIfAborted = (): void => {
      if (signal?.aborted === true) throw aborted();
    };
    throwIfAborted();
    const url = new URL(`${server}${path}`);
    const text = body === undefined ? undefined : JSON.stringify(body);
    const options: RequestOptions = {
      method,
      headers: {
        Accept: 'application/json',
        ...(text === undefined
          ? {}
          : {
              'Content-Type': method === 'PATCH' ? 'application/merge-patch+json' : 'application/json',
              'Content-Length': Buffer.byteLength(text),
            }),
      },
      timeout: timeoutMs,
    };
    await kubeConfig.applyToHTTPSOptions(options);
    throwIfAborted();
    const send = url.protocol === 'http:' ? httpRequest : httpsRequest;
    let deadline: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    const response = new Promise<ApiResponse>((resolve, reject) => {
      deadline = setTimeout(() => {
        req.destroy(new Error(`${method} ${path}: no complete response within ${timeoutMs / 1000} s`));
      }, timeoutMs);
      const req = send(url, options, (res) => {
        // The body is decoded chunk by chunk into text, never gathered into one Buffer first: a
        // page of Nodes is megabytes, and a Buffer.concat of it per page is a large allocation
        // outside the JavaScript heap that the C allocator keeps after it is freed (measured with
        // bench/scale.ts: tens of MiB of RSS over an informer's first list).
        const decoder = new StringDecoder('utf8');
        let text: string[] = [];
        let unreadable = false;
        const { onItem } = limits;
        const splitter =
          onItem === undefined
            ? undefined
            : new ListItemSplitter((item) => {
                if (unreadable) return;
                let parsed: unknown;
                try {
                  parsed = JSON.parse(item);
                } catch {
                  // Not JSON: the body is unreadable, as a whole body that does not parse is.
                  unreadable = true;
                  return;
                }
                onItem(parsed);
              }, limits.skipInItems);
        /** The body's first bytes, for ResponseTooLarge: chunks until responseHeadBytes. */
        const head: Buffer[] = [];
        let ended = false;
        let failed = false;
        let bytes = 0;
        const tooLarge = (): void => {
          // Rejected here, not through the destroyed request's 'error': the whole body may already
          // have arrived in this chunk, and its 'end' must not resolve what is too large.
          failed = true;
          text = [];
          const error = new ResponseTooLarge(`${method} ${path}`, maxBodyBytes, Buffer.concat(head).subarray(0, responseHeadBytes));
          reject(error);
          req.destroy(error);
        };
        // Known to be too large from its headers: only its head is read.
        const readUpTo =
          Number(res.headers['content-length'] ?? 0) > maxBodyBytes ? Math.min(maxBodyBytes, responseHeadBytes) : maxBodyBytes;
        res.on('data', (chunk: Buffer) => {
          if (failed) return;
          if (bytes < responseHeadBytes) head.push(chunk);
          bytes += chunk.length;
          // Stop reading before the body is held: a page of huge pods must not fill the memory reviews are answered with.
          if (bytes > readUpTo || (readUpTo < maxBodyBytes && bytes >= readUpTo)) {
            tooLarge();
            return;
          }
          const decoded = decoder.write(chunk);
          if (splitter !== undefined) splitter.write(decoded);
          else text.push(decoded);
        });
        res.on('end', () => {
          if (failed) return;
          ended = true;
          const rest = decoder.end();
          splitter?.write(rest);
          const raw = splitter !== undefined ? splitter.end() : text.join('') + rest;
          text = [];
          let parsed: unknown;
          try {
            parsed = limits.text === true ? raw : raw === '' || unreadable ? undefined : JSON.parse(raw);
          } catch {
            parsed = undefined;
          }
          resolve({ status: res.statusCode ?? 0, body: parsed });
        });
        res.on('error', reject);
        res.on('close', () => {
          if (!ended) reject(new Error(`${method} ${path}: the connection closed before the response was complete`));
        });
      });
      req.on('timeout', () => req.destroy(new Error(`${method} ${path}: no data for ${timeoutMs / 1000} s`)));
      req.on('error', reject);
      onAbort = () => {
        // Rejected first, so the abort is what the caller sees, not the destroyed connection's error.
        reject(aborted());
        req.destroy();
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      req.end(text);
    });
    return response.finally(() => {
      clearTimeout(deadline);
      if (onAbort !== undefined) signal?.removeEventListener('abort', onAbort);
    });
  };
}

/** The message of a Status body, or the HTTP status. */
export function describeFailure(response: ApiResponse): string {
  const body = response.body;
  const message =
    typeof body === 'object' && body !== null && typeof (body as { message?: unknown }).message === 'string'
      ? (body as { message: string }).message
      : '';
  return message === '' ? `HTTP ${response.status}` : `HTTP ${response.status}: ${message}`;
}
