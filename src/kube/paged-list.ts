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
 *
 * A page over its byte bound is asked for again with half the limit, down to one item; one item
 * over the page bound is read alone with the bound of the largest object the API server can send
 * (maxItemBytes); one over even that is stepped over, when the caller takes such items
 * (`onSkipped`), with the continue token the list's metadata carries before its items: the list
 * goes on and the caller counts the item as unread, rather than the whole list failing on it
 * every time it runs.
 */
import { isJsonObject, type JsonObject } from '../api/types.js';
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
  /**
   * A page of one item over maxPageBytes is asked for again with this bound (default
   * defaultMaxItemBytes); below maxPageBytes it changes nothing.
   */
  readonly maxItemBytes?: number;
  /** How many items one list attempt may return before it fails (default defaultMaxItems). */
  readonly maxItems?: number;
  /**
   * What is kept of each item as it arrives (undefined: nothing), before its page is complete:
   * an informer keeps a few hundred bytes of a 19 KB Node, never the page. Default: the item.
   */
  readonly keep?: (item: unknown) => unknown;
  /** Paths of object keys within each item that `keep` drops, left unparsed (ApiRequestLimits.skipInItems). */
  readonly skipInItems?: readonly (readonly string[])[];
  /** Awaited before every page request but the first: the caller's rate bound. */
  readonly pause: () => Promise<void>;
}

/** What a page says of its list besides its items. */
export interface ListPage {
  /** `metadata.resourceVersion`: the list's, the same on every page of one list (its first page's). */
  readonly resourceVersion?: string;
}

/** An item too large to read even alone: who it is, as far as the head of its page shows. */
export interface SkippedItem {
  /** '' when the head does not show it. */
  readonly namespace: string;
  readonly name: string;
  /** The bound it is over. */
  readonly maxBytes: number;
}

export interface PageHandlers {
  /** Called with each page's items, in order; the next page is requested after it resolves. */
  readonly onPage: (items: readonly unknown[], page: ListPage) => Promise<void> | void;
  /** Called when the list starts over from the first page after a 410 Gone. */
  readonly onRestart: () => void;
  /**
   * Called for an item over maxItemBytes, which the list steps over. Without it, such an item
   * fails the list (an informer must not sync without an object it cannot see).
   */
  readonly onSkipped?: (item: SkippedItem) => void;
}

/**
 * 3 restarts: kube-apiserver compacts etcd every 5 minutes (--etcd-compaction-interval), and a
 * token expires only when a compaction passes its revision. The server's audit lists 50,000 pods
 * in under 2 minutes at its rate bound (src/server/periodic-audit.ts), so at most one compaction
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

/**
 * 18 MiB + 64 KiB: the largest page of one object kube-apiserver can send. An object is at most
 * 3 MiB of JSON as its author sent it (the API server's MaxRequestBodyBytes; etcd's default
 * --max-request-bytes of 1.5 MiB holds it to less once stored); the API server writes it back with
 * Go's encoding/json, which escapes `<`, `>` and `&` as `\u003c`, six bytes for one, so at most 6
 * times that, 18 MiB; the list around it (kind, apiVersion, metadata with a continue token of a
 * few hundred bytes) is far below 64 KiB. Holding it costs about three times that while it is
 * read (the bytes, their text, the parsed object) once per such object, never per page.
 */
export const defaultMaxItemBytes = 18 * 1024 * 1024 + 64 * 1024;

export async function listInPages(request: ApiRequest, path: string, options: PagedListOptions, handlers: PageHandlers): Promise<void> {
  const separator = path.includes('?') ? '&' : '?';
  let token: string | undefined;
  let restarts = 0;
  let first = true;
  let items = 0;
  const maxItems = options.maxItems ?? defaultMaxItems;
  const keep = options.keep ?? ((item: unknown) => item);
  let limit = options.pageSize;
  const pageBytes = options.maxPageBytes ?? Infinity;
  const itemBytes = Math.max(pageBytes, options.maxItemBytes ?? defaultMaxItemBytes);
  /** The next request is the current item alone, with itemBytes. */
  let alone = false;
  /** Checks and takes the continue token that ends a page; false when the list is complete. */
  const advance = (next: unknown): boolean => {
    if (typeof next !== 'string' || next === '') return false;
    // A token names the position after the page it ends; the same one again would be the same page forever.
    if (next === token) {
      throw new Error(`listing ${path}: the API server answered the continue token ${JSON.stringify(token)} with the same token`);
    }
    token = next;
    return true;
  };
  for (;;) {
    if (!first) await options.pause();
    first = false;
    const query = `limit=${limit}${token === undefined ? '' : `&continue=${encodeURIComponent(token)}`}`;
    const maxBodyBytes = alone ? itemBytes : options.maxPageBytes;
    // Items are parsed one by one as the page arrives (ApiRequestLimits.onItem) and kept as the
    // caller wants them; they count only once the page is complete.
    const kept: unknown[] = [];
    let received = 0;
    const onItem = (item: unknown): void => {
      received += 1;
      const value = keep(item);
      if (value !== undefined) kept.push(value);
    };
    let response;
    try {
      response = await request('GET', `${path}${separator}${query}`, undefined, { maxBodyBytes, onItem, skipInItems: options.skipInItems });
    } catch (error) {
      if (!(error instanceof ResponseTooLarge)) throw error;
      if (limit > 1) {
        limit = Math.max(1, Math.floor(limit / 2));
        continue;
      }
      if (!alone && itemBytes > pageBytes) {
        alone = true;
        continue;
      }
      const head = readListHead(error.head.toString('utf8'));
      if (handlers.onSkipped === undefined || head.metadata === undefined) {
        throw new Error(`listing ${path}: one item is more than ${error.maxBytes} bytes`, { cause: error });
      }
      alone = false;
      items += 1;
      if (items > maxItems) {
        throw new Error(`listing ${path}: more than ${maxItems} items (a list that does not end); giving up until the next run`);
      }
      handlers.onSkipped({ namespace: head.namespace ?? '', name: head.name ?? '', maxBytes: error.maxBytes });
      if (!advance(head.metadata.continue)) return;
      continue;
    }
    alone = false;
    if (response.status === 410 && token !== undefined) {
      if (restarts >= options.maxRestarts) {
        throw new Error(`listing ${path}: the continue token expired (410 Gone) ${restarts + 1} times; giving up until the next run`);
      }
      restarts += 1;
      token = undefined;
      items = 0;
      limit = options.pageSize;
      handlers.onRestart();
      continue;
    }
    if (response.status !== 200) throw new Error(`listing ${path}: ${describeFailure(response)}`);
    const body = response.body;
    if (!isJsonObject(body) || !Array.isArray(body.items)) throw new Error(`listing ${path}: the response is not a list`);
    // A request that does not hand items on (onItem) leaves them in the body.
    for (const item of body.items as unknown[]) onItem(item);
    items += received;
    if (items > maxItems) {
      throw new Error(`listing ${path}: more than ${maxItems} items (a list that does not end); giving up until the next run`);
    }
    const metadata = isJsonObject(body.metadata) ? body.metadata : {};
    const resourceVersion = typeof metadata.resourceVersion === 'string' ? metadata.resourceVersion : undefined;
    await handlers.onPage(kept, resourceVersion === undefined ? {} : { resourceVersion });
    limit = Math.min(options.pageSize, limit * 2);
    if (!advance(metadata.continue)) return;
  }
}

/**
 * Whether a list of an API that may not be served can be read: Karpenter's NodePools, DRA's
 * ResourceClaims (resource.k8s.io/v1, served from Kubernetes 1.34). One request tells: the first
 * item (`limit=1`, its body bounded as one object's) answered 404 means the API server does not
 * serve the resource (nothing to list); 403 that the caller may not list it (a role made before
 * the audit read it). Either way the caller skips it and says so, and the rest of its work goes
 * on; any other failure rejects, as a list's would.
 */
export type ListProbe =
  { readonly listable: true } | { readonly listable: false; readonly why: 'not-served' | 'forbidden'; readonly message: string };

export async function probeList(request: ApiRequest, path: string, limits: { readonly maxBodyBytes?: number } = {}): Promise<ListProbe> {
  const separator = path.includes('?') ? '&' : '?';
  // The item is parsed as it arrives and dropped: the probe holds nothing.
  const probe = await request('GET', `${path}${separator}limit=1`, undefined, {
    maxBodyBytes: limits.maxBodyBytes ?? defaultMaxItemBytes,
    onItem: () => undefined,
  });
  if (probe.status === 404) return { listable: false, why: 'not-served', message: describeFailure(probe) };
  if (probe.status === 403) return { listable: false, why: 'forbidden', message: describeFailure(probe) };
  if (probe.status !== 200) throw new Error(`listing ${path}: ${describeFailure(probe)}`);
  return { listable: true };
}

/** What the head of a list's body shows: its metadata, and its first item's namespace and name. */
export interface ListHead {
  readonly metadata?: JsonObject;
  readonly namespace?: string;
  readonly name?: string;
}

/**
 * Reads the head of a list's JSON body (its first bytes, the rest cut off anywhere, even inside a
 * string): the list's `metadata` when it is complete within the head, and `items[0].metadata.name`
 * and `.namespace` when they are. kube-apiserver writes a list's metadata before its items, so the
 * head of a page of one huge item still carries the continue token past it.
 *
 * Hand-written: a streaming JSON parser from npm would do, but it reads values (a huge string
 * included) to give them whole, where this skips everything it does not need, within the head
 * (at most responseHeadBytes), and stops at the first item's metadata.
 */
export function readListHead(text: string): ListHead {
  const scanner = new HeadScanner(text);
  let metadata: JsonObject | undefined;
  let namespace: string | undefined;
  let name: string | undefined;
  try {
    scanner.members((key) => {
      if (key === 'metadata' && scanner.peek() === '{') {
        const value: unknown = JSON.parse(scanner.rawValue());
        if (isJsonObject(value)) metadata = value;
        return true;
      }
      if (key !== 'items' || scanner.peek() !== '[') return false;
      scanner.expect('[');
      if (scanner.peek() !== '{') throw new HeadDone();
      scanner.members((itemKey) => {
        if (itemKey !== 'metadata' || scanner.peek() !== '{') return false;
        scanner.members((field) => {
          if ((field !== 'name' && field !== 'namespace') || scanner.peek() !== '"') return false;
          if (field === 'name') name = scanner.string();
          else namespace = scanner.string();
          return true;
        });
        throw new HeadDone();
      });
      throw new HeadDone();
    });
  } catch (error) {
    if (!(error instanceof HeadDone || error instanceof HeadCut || error instanceof SyntaxError)) throw error;
  }
  return {
    ...(metadata === undefined ? {} : { metadata }),
    ...(namespace === undefined ? {} : { namespace }),
    ...(name === undefined ? {} : { name }),
  };
}

/** The head ends here (a truncated body). */
class HeadCut extends Error {}
/** Everything wanted has been read. */
class HeadDone extends Error {}

/** A cursor over JSON text that may be cut off anywhere; each step throws HeadCut at its end. */
class HeadScanner {
  private position = 0;

  constructor(private readonly text: string) {}

  /** The next character after whitespace, not consumed. */
  peek(): string {
    while (this.position < this.text.length && ' \t\n\r'.includes(this.text.charAt(this.position))) this.position += 1;
    if (this.position >= this.text.length) throw new HeadCut();
    return this.text.charAt(this.position);
  }

  expect(character: string): void {
    if (this.peek() !== character) throw new SyntaxError(`expected ${character} at ${this.position}`);
    this.position += 1;
  }

  /** A string value, decoded. */
  string(): string {
    const start = this.position;
    this.skipString();
    return JSON.parse(this.text.slice(start, this.position)) as string;
  }

  /** The text of the next value, whole. */
  rawValue(): string {
    this.peek();
    const start = this.position;
    this.skip();
    return this.text.slice(start, this.position);
  }

  /**
   * The members of the object that starts here: `visit(key)` is called at each value and either
   * reads it (returning true) or leaves it to be skipped (false).
   */
  members(visit: (key: string) => boolean): void {
    this.expect('{');
    if (this.peek() === '}') {
      this.position += 1;
      return;
    }
    for (;;) {
      this.peek();
      const key = this.string();
      this.expect(':');
      if (!visit(key)) this.skip();
      const next = this.peek();
      this.position += 1;
      if (next === '}') return;
      if (next !== ',') throw new SyntaxError(`expected , or } at ${this.position - 1}`);
    }
  }

  private skipString(): void {
    if (this.peek() !== '"') throw new SyntaxError(`expected a string at ${this.position}`);
    this.position += 1;
    for (;;) {
      if (this.position >= this.text.length) throw new HeadCut();
      const character = this.text.charAt(this.position);
      if (character === '"') {
        this.position += 1;
        return;
      }
      this.position += character === '\\' ? 2 : 1;
    }
  }

  /** Skips one value of any kind. */
  private skip(): void {
    const first = this.peek();
    if (first === '"') {
      this.skipString();
      return;
    }
    if (first !== '{' && first !== '[') {
      // A number, true, false or null: up to the next delimiter.
      while (this.position < this.text.length && !',}] \t\n\r'.includes(this.text.charAt(this.position))) this.position += 1;
      if (this.position >= this.text.length) throw new HeadCut();
      return;
    }
    let depth = 0;
    for (;;) {
      if (this.position >= this.text.length) throw new HeadCut();
      const character = this.text.charAt(this.position);
      if (character === '"') {
        this.skipString();
        continue;
      }
      this.position += 1;
      if (character === '{' || character === '[') depth += 1;
      else if (character === '}' || character === ']') {
        depth -= 1;
        if (depth === 0) return;
      }
    }
  }
}
