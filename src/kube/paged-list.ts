/**
 * A list in pages (`limit` and `continue`), as client-go's pager does it: the API server never
 * builds one giant response, and the caller holds one page at a time.
 *
 * A continue token names the resourceVersion of the list's first page; once etcd has compacted
 * that revision, the next page is answered 410 Gone ("the provided continue parameter is too
 * old"). The list then starts over from the first page (the caller is told, to forget what it
 * gathered), at most `maxRestarts` times. Any other failure, a connection cut mid-page included,
 * rejects: the caller's run fails and is retried later, never completed with pages missing. So
 * does a list that does not end: a continue token answered with itself, or more than `maxItems`
 * items in all.
 */
import { isJsonObject } from '../api/types.js';
import { describeFailure, ResponseTooLarge, type ApiRequest } from './api-requests.js';

export interface PagedListOptions {
  /** Items per page (`limit`). */
  readonly pageSize: number;
  /** How many times a list whose continue token expired starts over before it fails. */
  readonly maxRestarts: number;
  /**
   * A page whose body is longer is asked for again with half the limit, down to one item; the
   * limit doubles back towards pageSize after each page that fits. Default: no bound.
   */
  readonly maxPageBytes?: number;
  /** How many items one list attempt may return before it fails (default defaultMaxItems). */
  readonly maxItems?: number;
  /** Awaited before every page request but the first: the caller's rate bound. */
  readonly pause: () => Promise<void>;
}

export interface PageHandlers {
  /** Called with each page's items, in order; the next page is requested after it resolves. */
  readonly onPage: (items: readonly unknown[]) => Promise<void> | void;
  /** Called when the list starts over from the first page after a 410 Gone. */
  readonly onRestart: () => void;
}

/**
 * 3 restarts: kube-apiserver compacts etcd every 5 minutes (--etcd-compaction-interval), and a
 * token expires only when a compaction passes its revision. The server's audit lists 50,000 pods
 * in under 2 minutes at its rate bound (src/cli/periodic-audit.ts), so at most one compaction
 * falls within a list and one restart is what a healthy cluster needs; a list that loses its
 * token three times in a row cannot finish between compactions, and starting it again and again
 * would only load the API server: the run fails and the next interval tries again.
 */
export const defaultMaxRestarts = 3;

/**
 * 300,000 items: twice the largest cluster Kubernetes supports (150,000 pods in all, "Considerations
 * for large clusters" in the Kubernetes documentation; 5,000 nodes, fewer namespaces). A list
 * longer than that is not a cluster's list but an API server (or something in its place) that
 * never ends it, handing out a new continue token with every page; without a bound the audit would
 * list forever while its findings grow in the memory the webhook answers reviews with.
 */
export const defaultMaxItems = 300_000;

export async function listInPages(request: ApiRequest, path: string, options: PagedListOptions, handlers: PageHandlers): Promise<void> {
  const separator = path.includes('?') ? '&' : '?';
  let token: string | undefined;
  let restarts = 0;
  let first = true;
  let items = 0;
  const maxItems = options.maxItems ?? defaultMaxItems;
  let limit = options.pageSize;
  for (;;) {
    if (!first) await options.pause();
    first = false;
    const query = `limit=${limit}${token === undefined ? '' : `&continue=${encodeURIComponent(token)}`}`;
    let response;
    try {
      response = await request('GET', `${path}${separator}${query}`, undefined, { maxBodyBytes: options.maxPageBytes });
    } catch (error) {
      if (!(error instanceof ResponseTooLarge)) throw error;
      if (limit === 1) throw new Error(`listing ${path}: one item is more than ${error.maxBytes} bytes`, { cause: error });
      limit = Math.max(1, Math.floor(limit / 2));
      continue;
    }
    if (response.status === 410 && token !== undefined) {
      if (restarts >= options.maxRestarts) {
        throw new Error(`listing ${path}: the continue token expired (410 Gone) ${restarts + 1} times; giving up until the next run`);
      }
      restarts += 1;
      token = undefined;
      items = 0;
      handlers.onRestart();
      continue;
    }
    if (response.status !== 200) throw new Error(`listing ${path}: ${describeFailure(response)}`);
    const body = response.body;
    if (!isJsonObject(body) || !Array.isArray(body.items)) throw new Error(`listing ${path}: the response is not a list`);
    items += body.items.length;
    if (items > maxItems) {
      throw new Error(`listing ${path}: more than ${maxItems} items (a list that does not end); giving up until the next run`);
    }
    await handlers.onPage(body.items as unknown[]);
    limit = Math.min(options.pageSize, limit * 2);
    const next = isJsonObject(body.metadata) ? body.metadata.continue : undefined;
    if (typeof next !== 'string' || next === '') return;
    // A token names the position after the page it ends; the same one again would be the same page forever.
    if (next === token) {
      throw new Error(`listing ${path}: the API server answered the continue token ${JSON.stringify(token)} with the same token`);
    }
    token = next;
  }
}
