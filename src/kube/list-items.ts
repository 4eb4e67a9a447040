/**
 * A list response read item by item: the text of a JSON body is scanned as it arrives (decoded
 * chunk by chunk, src/kube/api-requests.ts) for the elements of its top-level `items` array, each element's text is handed on alone (to be parsed
 * with JSON.parse), and what remains (the list's kind, apiVersion and metadata, with `"items":[]`)
 * is the envelope. A page of a list is thus never one string and one parsed tree: only one item
 * at a time, and whatever the caller keeps of it.
 *
 * Fields the caller will not read can be left out of each item's text as it is scanned (`skip`:
 * paths of object keys within an item, such as `status` or `metadata.managedFields`): their value
 * is written as `null`, so the text stays JSON and JSON.parse never builds what would be dropped
 * at once. A real Node is 19 KB of JSON, three quarters of it `status` and `managedFields`.
 *
 * Why: a page of 100 real Nodes is 2 MB of JSON; as one string it lands in V8's large-object
 * space, its parsed tree is several times that, and 5,000 Nodes parsed whole are some 300 MB of
 * allocation for the few MiB kept; the garbage grows the heap, and the process's RSS with it, by
 * far more than the cache it fills (bench/scale.ts). Hand-written, because a streaming JSON parser
 * from npm (stream-json, @streamparser/json) tokenizes every value in JavaScript, several times
 * slower than JSON.parse; this only finds where items and skipped values begin and end (a loop
 * over bytes, looking at the structural characters, which in UTF-8 never occur inside a
 * multi-byte character) and leaves the parsing to JSON.parse.
 *
 * It does not check the JSON: a body that is not JSON gives texts or an envelope that JSON.parse
 * then refuses.
 */

const quote = 0x22;
const backslash = 0x5c;
const openBrace = 0x7b;
const closeBrace = 0x7d;
const openBracket = 0x5b;
const closeBracket = 0x5d;
const comma = 0x2c;
const colon = 0x3a;

/** Whitespace JSON allows between tokens. */
function isSpace(byte: number): boolean {
  return byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09;
}

/** A key is read to at most this many characters; a longer one matches no path (the paths' keys are short). */
const maxKeyBytes = 64;

/**
 * The scan keeps no object per container or per key (a Node has hundreds of each, and 5,000 Nodes
 * scanned that way were gigabytes of short-lived garbage): the open containers are entries of
 * arrays indexed by depth, and a key is read, into one reused buffer, only where it matters: at the
 * list's top level (`items`) and within an item along a skipped path's prefix.
 */
export class ListItemSplitter {
  /** How many objects and arrays are open around the current byte. */
  private depth = 0;
  /** By depth (1 = the list's object): an object (not an array). */
  private readonly isObject: boolean[] = [false];
  /** By depth: an object expects a key next (after `{` or `,`), not a value. */
  private readonly expectKey: boolean[] = [false];
  /** By depth: the object's current key, where keys are read ('' elsewhere). */
  private readonly keys: string[] = [''];
  /** By depth, within an item: the keys from the item's object to here are a proper prefix of a skipped path. */
  private readonly onPath: boolean[] = [false];
  private inString = false;
  private escaped = false;
  /** The key being read: its text from earlier chunks, and where it starts in this one (-1: this string is not a key that is read, or is too long, or escaped). */
  private keyPrefix = '';
  private keyFrom = -1;
  /** A value is expected next in the innermost object (after `:`): its first byte decides. */
  private valueNext = false;
  /** The top-level items array is open: its elements are at depth 2. */
  private inItems = false;
  private itemOpen = false;
  /** A scalar item or skipped scalar (number, true, false, null) ends at the next delimiter. */
  private scalar: 'none' | 'item' | 'skipped' = 'none';
  /** While a skipped value is being passed: the depth it started at (it ends when the scan is back at it). */
  private skipDepth = -1;
  private skipString = false;
  private item: string[] = [];
  private readonly envelope: string[] = [];
  private readonly skip: readonly (readonly string[])[];

  /**
   * `onItem` gets each item's text; `skip` lists paths of object keys within an item (`status`,
   * `metadata.managedFields`) whose values are written as `null`.
   */
  constructor(
    private readonly onItem: (text: string) => void,
    skip: readonly (readonly string[])[] = [],
  ) {
    this.skip = skip.filter((path) => path.length > 0);
  }

  write(chunk: string): void {
    /** Where the run of bytes going to the envelope, or to the current item, started in this chunk (-1: none). */
    let envelopeFrom = this.inItems ? -1 : 0;
    let itemFrom = this.itemOpen && this.skipDepth === -1 ? 0 : -1;
    for (let i = 0; i < chunk.length; i++) {
      const byte = chunk.charCodeAt(i);
      if (this.inString) {
        if (this.escaped) {
          this.escaped = false;
        } else if (byte === backslash) {
          this.escaped = true;
          // A key written with escapes matches no path: its characters are not its text.
          this.keyFrom = -1;
        } else if (byte === quote) {
          this.inString = false;
          this.closeString(chunk, i);
          if (this.skipString && this.depth === this.skipDepth) {
            this.skipDepth = -1;
            this.skipString = false;
            itemFrom = i + 1;
          } else if (this.itemOpen && this.depth === 2 && this.skipDepth === -1) {
            // A string item ends with its quote.
            this.endItem(chunk, itemFrom, i + 1);
            itemFrom = -1;
          }
        }
        continue;
      }
      if (this.scalar !== 'none' && (byte === comma || byte === closeBracket || byte === closeBrace || isSpace(byte))) {
        if (this.scalar === 'item') {
          this.endItem(chunk, itemFrom, i);
          itemFrom = -1;
        } else {
          this.skipDepth = -1;
          itemFrom = i;
        }
        this.scalar = 'none';
      }
      if (isSpace(byte)) continue;
      const depth = this.depth;
      // The first byte of a value: an item, a skipped value, or neither.
      const startsValue = byte !== comma && byte !== colon && byte !== closeBrace && byte !== closeBracket;
      if (startsValue && this.inItems && depth === 2 && !this.itemOpen) {
        this.itemOpen = true;
        itemFrom = i;
        if (byte !== openBrace && byte !== openBracket && byte !== quote) this.scalar = 'item';
      } else if (
        startsValue &&
        this.valueNext &&
        this.itemOpen &&
        this.skipDepth === -1 &&
        this.onPath[depth] === true &&
        this.pathEnds(depth)
      ) {
        this.item.push(chunk.slice(itemFrom, i), 'null');
        itemFrom = -1;
        this.skipDepth = depth;
        this.skipString = byte === quote;
        if (byte !== openBrace && byte !== openBracket && byte !== quote) this.scalar = 'skipped';
      }
      const inObject = this.isObject[depth] === true;
      const keyExpected = inObject && this.expectKey[depth] === true;
      const opensValue = startsValue && this.valueNext;
      if (startsValue) this.valueNext = false;
      switch (byte) {
        case quote:
          this.inString = true;
          // Keys are read at the list's level, and within an item along a skipped path.
          this.keyPrefix = '';
          this.keyFrom = keyExpected && (depth === 1 || (this.onPath[depth] === true && this.skipDepth === -1)) ? i + 1 : -1;
          break;
        case openBrace:
        case openBracket: {
          const opensItems = byte === openBracket && depth === 1 && inObject && opensValue && this.keys[1] === 'items';
          const next = depth + 1;
          this.depth = next;
          this.isObject[next] = byte === openBrace;
          this.expectKey[next] = byte === openBrace;
          this.keys[next] = '';
          // The item's own object starts every path; an object deeper on a path continues it.
          this.onPath[next] =
            byte === openBrace &&
            this.skipDepth === -1 &&
            this.skip.length > 0 &&
            ((this.inItems && next === 3) || (next > 3 && opensValue && this.onPath[depth] === true && this.pathContinues(depth)));
          if (opensItems) {
            this.inItems = true;
            // The envelope keeps the `[`; the items' bytes go to the items.
            this.envelope.push(chunk.slice(envelopeFrom, i + 1));
            envelopeFrom = -1;
          }
          break;
        }
        case closeBrace:
        case closeBracket:
          this.depth = depth - 1;
          if (this.inItems && this.depth === 1) {
            // The end of the items array: its `]` and what follows are the envelope's again.
            this.inItems = false;
            envelopeFrom = i;
          } else if (this.skipDepth === this.depth) {
            this.skipDepth = -1;
            itemFrom = i + 1;
          } else if (this.itemOpen && this.depth === 2) {
            this.endItem(chunk, itemFrom, i + 1);
            itemFrom = -1;
          }
          break;
        case colon:
          if (inObject) this.valueNext = true;
          break;
        case comma:
          if (inObject) this.expectKey[depth] = true;
          break;
        default:
      }
    }
    if (envelopeFrom !== -1) this.envelope.push(chunk.slice(envelopeFrom));
    if (this.itemOpen && itemFrom !== -1) this.item.push(chunk.slice(itemFrom));
    if (this.inString && this.keyFrom !== -1) {
      // A key cut by the chunk's end: its start is carried over, as long as it could still match.
      this.keyPrefix += chunk.slice(this.keyFrom);
      this.keyFrom = this.keyPrefix.length > maxKeyBytes ? -1 : 0;
    }
  }

  /** The envelope's text: the body without its items' elements. */
  end(): string {
    if (this.itemOpen) this.endItem('', 0, 0);
    return this.envelope.join('');
  }

  /** A string closed (its quote at `end` in `chunk`) in an object where a key was expected: it is the object's key now. */
  private closeString(chunk: string, end: number): void {
    if (this.isObject[this.depth] !== true || this.expectKey[this.depth] !== true) return;
    this.expectKey[this.depth] = false;
    const key = this.keyFrom === -1 ? '' : this.keyPrefix + chunk.slice(this.keyFrom, end);
    this.keys[this.depth] = key.length > maxKeyBytes ? '' : key;
    this.keyFrom = -1;
    this.keyPrefix = '';
  }

  /** Whether some skipped path is the keys from the item's object (depth 3) to `depth`. */
  private pathEnds(depth: number): boolean {
    return this.skip.some((path) => path.length === depth - 2 && this.matchesTo(path, depth));
  }

  /** Whether some skipped path goes on beyond the keys from depth 3 to `depth`. */
  private pathContinues(depth: number): boolean {
    return this.skip.some((path) => path.length > depth - 2 && this.matchesTo(path, depth));
  }

  private matchesTo(path: readonly string[], depth: number): boolean {
    for (let level = 3; level <= depth; level++) {
      const key = this.keys[level];
      if (key === undefined || key === '' || path[level - 3] !== key) return false;
    }
    return true;
  }

  /** The item that started at `from` in `chunk` (-1: in an earlier chunk, all of which is pushed) ends before `to`. */
  private endItem(chunk: string, from: number, to: number): void {
    if (from !== -1) this.item.push(chunk.slice(from, to));
    const text = this.item.length === 1 ? (this.item[0] ?? '') : this.item.join('');
    this.item = [];
    this.itemOpen = false;
    this.onItem(text);
  }
}
