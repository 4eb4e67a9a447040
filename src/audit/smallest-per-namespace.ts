/**
 * The first `cap` items of each namespace in a given order, out of any number added one at a
 * time, without holding them all: the periodic audit's policy reports show at most
 * maxResultsPerReport findings of a namespace (the first in report order), and a tenant decides
 * how many violating pods its namespace holds.
 *
 * A namespace's items are held unsorted until there are 2 × cap of them, then sorted and cut to
 * the first cap: each cut sorts 2 × cap items and drops cap, so the work is O(log cap) per item
 * added (linear in the items for a fixed cap) and a namespace never holds more than 2 × cap - 1.
 * With cap Infinity everything is kept (`tolerator audit`, whose output is every finding).
 */
export class SmallestPerNamespace<T extends { readonly namespace: string }> {
  private readonly lists = new Map<string, T[]>();
  private held = 0;

  constructor(
    private readonly cap: number,
    private readonly compare: (a: T, b: T) => number,
  ) {
    if (!(cap >= 1)) throw new RangeError(`keep at least 1 item per namespace, not ${cap}`);
  }

  add(item: T): void {
    let list = this.lists.get(item.namespace);
    if (list === undefined) {
      list = [];
      this.lists.set(item.namespace, list);
    }
    list.push(item);
    this.held += 1;
    if (list.length >= 2 * this.cap) {
      list.sort(this.compare);
      this.held -= list.length - this.cap;
      list.length = this.cap;
    }
  }

  /** Items held right now (at most 2 × cap - 1 per namespace): what the memory tests measure. */
  get heldCount(): number {
    return this.held;
  }

  /** The first cap items of every namespace, all of them in order. */
  sorted(): T[] {
    const kept: T[] = [];
    for (const list of this.lists.values()) {
      list.sort(this.compare);
      if (list.length > this.cap) {
        this.held -= list.length - this.cap;
        list.length = this.cap;
      }
      for (const item of list) kept.push(item);
    }
    return kept.sort(this.compare);
  }
}
