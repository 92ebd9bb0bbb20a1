// The memory store's order of finished tasks by last use, overall and per owner: two doubly linked lists threaded
// through the entries themselves (each entry carries its neighbours in both).
//
// Why not Maps in insertion order, as before: a use (every poll of a finished task) was then a delete and a set in
// the global Map and in the owner's, four hashings of the id, and the deleted slots made V8 rebuild the tables
// as polls went on, garbage for the collector (issue 38). Here a use is a few pointer writes, eviction takes the
// oldest end, and a removal from the middle (expiry, a drop) needs no search. Lookup by id stays the store's Map.

/** What an entry carries to be in both lists: its neighbours among every finished task and among its owner's. */
export interface LruLinks<T> {
  older: T | undefined;
  newer: T | undefined;
  ownerOlder: T | undefined;
  ownerNewer: T | undefined;
}

/** One list's two ends, and how many entries it holds. */
export class LruEnds<T> {
  oldest: T | undefined = undefined;
  newest: T | undefined = undefined;
  size = 0;
}

/**
 * Every finished entry, least recently used first (`all`), and each owner's (an LruEnds the caller keeps per owner
 * and passes in). An entry is in both lists or in neither.
 */
export class LruOrder<T extends LruLinks<T>> {
  readonly all = new LruEnds<T>();

  /** Whether the entry is in the lists. */
  has(node: T): boolean {
    return node.newer !== undefined || this.all.newest === node;
  }

  /** Adds an entry that is in neither list as the most recently used, overall and among its owner's (`mine`). */
  add(node: T, mine: LruEnds<T>): void {
    this.pushAll(node);
    pushMine(mine, node);
  }

  /** The entry was used: it becomes the most recently used in both lists. Nothing happens if it is in neither. */
  use(node: T, mine: LruEnds<T>): void {
    if (node.newer !== undefined) {
      this.unlinkAll(node);
      this.pushAll(node);
    } else if (this.all.newest !== node) return;
    if (node.ownerNewer !== undefined) {
      unlinkMine(mine, node);
      pushMine(mine, node);
    }
  }

  /** Takes the entry out of both lists; returns false (and changes nothing) if it was in neither. */
  remove(node: T, mine: LruEnds<T>): boolean {
    if (!this.has(node)) return false;
    this.unlinkAll(node);
    unlinkMine(mine, node);
    return true;
  }

  private pushAll(node: T): void {
    const ends = this.all;
    node.older = ends.newest;
    node.newer = undefined;
    if (ends.newest === undefined) ends.oldest = node;
    else ends.newest.newer = node;
    ends.newest = node;
    ends.size++;
  }

  private unlinkAll(node: T): void {
    const ends = this.all;
    const { older, newer } = node;
    if (older === undefined) ends.oldest = newer;
    else older.newer = newer;
    if (newer === undefined) ends.newest = older;
    else newer.older = older;
    node.older = undefined;
    node.newer = undefined;
    ends.size--;
  }
}

function pushMine<T extends LruLinks<T>>(ends: LruEnds<T>, node: T): void {
  node.ownerOlder = ends.newest;
  node.ownerNewer = undefined;
  if (ends.newest === undefined) ends.oldest = node;
  else ends.newest.ownerNewer = node;
  ends.newest = node;
  ends.size++;
}

function unlinkMine<T extends LruLinks<T>>(ends: LruEnds<T>, node: T): void {
  const older = node.ownerOlder;
  const newer = node.ownerNewer;
  if (older === undefined) ends.oldest = newer;
  else older.ownerNewer = newer;
  if (newer === undefined) ends.newest = older;
  else newer.ownerOlder = older;
  node.ownerOlder = undefined;
  node.ownerNewer = undefined;
  ends.size--;
}
