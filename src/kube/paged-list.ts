/**
 * A list in pages (`limit` and `continue`), as client-go's pager does it: the API server never
 * builds one giant response, and the caller holds one page at a time.
 *
 * A continue token names the resourceVersion of the list's first page; once etcd has compacted
 * that revision, the next page is answered 410 Gone ("the provided continue parameter is too
 * old"). The list then starts over from the first page (the caller is told, to forget what it
 * gathered), at most `maxRestarts` times. Any other failure, a connection cut mid-page included,
 * rejects: the caller's run fails and is retried later, never completed with pages missing.
 */
import { isJsonObject } from '../api/types.js';
import { describeFailure, type ApiRequest } from './api-requests.js';

export interface PagedListOptions {
  /** Items per page (`limit`). */
  readonly pageSize: number;
  /** How many times a list whose continue token expired starts over before it fails. */
  readonly maxRestarts: number;
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

export async function listInPages(request: ApiRequest, path: string, options: PagedListOptions, handlers: PageHandlers): Promise<void> {
  const separator = path.includes('?') ? '&' : '?';
  let token: string | undefined;
  let restarts = 0;
  let first = true;
  for (;;) {
    if (!first) await options.pause();
    first = false;
    const query = `limit=${options.pageSize}${token === undefined ? '' : `&continue=${encodeURIComponent(token)}`}`;
    const response = await request('GET', `${path}${separator}${query}`);
    if (response.status === 410 && token !== undefined) {
      if (restarts >= options.maxRestarts) {
        throw new Error(`listing ${path}: the continue token expired (410 Gone) ${restarts + 1} times; giving up until the next run`);
      }
      restarts += 1;
      token = undefined;
      handlers.onRestart();
      continue;
    }
    if (response.status !== 200) throw new Error(`listing ${path}: ${describeFailure(response)}`);
    const body = response.body;
    if (!isJsonObject(body) || !Array.isArray(body.items)) throw new Error(`listing ${path}: the response is not a list`);
    await handlers.onPage(body.items as unknown[]);
    const next = isJsonObject(body.metadata) ? body.metadata.continue : undefined;
    if (typeof next !== 'string' || next === '') return;
    token = next;
  }
}
