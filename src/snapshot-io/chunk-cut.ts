import type { ContentAddressing } from '../contract/content-address.js';
import type { StorageAdapter } from '../contract/storage.js';
import {
  chunkKey,
  encodeEnvelope,
  encodeNode,
  LEAF_LOOKAHEAD,
  needsLevel,
  nextLeafEnd,
  NODE_FANOUT,
  nodeGroups,
} from '../codec/chunking.js';
import { isHandedOver } from '../storage/handed-over.js';
import {
  addressingOf,
  chunkSplit,
  KNOWN_CHUNK_TTL_MS,
  splitDocument,
  knownChunkTest,
  storedChunk,
  type ChunkedDocument,
  type ChunkWrite,
  type DocumentSplit,
} from './chunk-store.js';

/**
 * The write side of content chunks: a document cut into leaves and nodes exactly as
 * `chunkDocument` (chunk-store.ts) cuts it, without cutting and hashing again what this process
 * cut of recent versions of the same document.
 *
 * A leaf boundary depends on the leaf's own bytes alone (codec/chunking.ts), so where the cut of
 * a new version reaches the first bytes of a leaf of a recent version and the whole leaf's bytes
 * follow, that leaf is the new version's next leaf too, with the same id, and so are the ones
 * after it while their bytes follow. Node ids are remembered by the ids they list.
 *
 * Which chunks to write: those this process does not know it wrote within
 * `KNOWN_CHUNK_TTL_MS` (the sweep's grace rule rests on it). A version reusing a leaf this
 * process did not write (it learned of it by reading, after a restart) goes through
 * `chunkDocument`, which also knows the chunks this process read.
 */

/** Recent documents remembered per store (one per document lineage: a thread, a run). */
const RECENT_MAX = 8;
/** Bytes of recent documents remembered per store. */
const RECENT_BYTES = 32 * 1024 * 1024;
/** Nodes remembered per store (the ids they list: up to 4 KiB each). */
const NODES_MAX = 2048;
/** Chunk ids remembered as written per store (about 100 bytes each). */
const WRITTEN_MAX = 200_000;

/** A document as this process cut it: its bytes (a copy), its leaves' end offsets and ids. */
interface CutDocument {
  readonly bytes: Uint8Array;
  readonly ends: readonly number[];
  readonly ids: readonly string[];
  /** What is known of its leaves' writes by this process (see `allWritten`). */
  written?: WrittenSince;
  /** Its leaves by their first bytes, made when first needed. */
  probes?: Probes;
}

/**
 * Leaves a document holds that this process wrote no earlier than `since`, as found at
 * `generation` of its state: all but those listed in `except` (new in that version: written, if
 * at all, once it was durable).
 */
interface WrittenSince {
  readonly since: number;
  readonly generation: number;
  readonly except: readonly string[];
}

/** What one process remembers of its writes of a store's chunks. */
interface CutState {
  /** The addressing the ids below were made by: ids of another scheme never mix. */
  readonly addressing: ContentAddressing;
  readonly scheme: string;
  /** Newest first. */
  readonly recent: CutDocument[];
  recentBytes: number;
  /** A node's first child's id → its last child's id → the node's children and its id (the latest node seen with them), oldest first. */
  readonly nodes: Map<string, Map<string, KnownNode>>;
  /** Nodes in `nodes`. */
  nodeCount: number;
  /** Chunk id → when a write holding it was durable (ms). */
  readonly written: Map<string, number>;
  /** Counts the times ids left `written` other than by expiring: what a document's `written` found may no longer hold. */
  generation: number;
}

const states = new WeakMap<StorageAdapter, CutState>();

function stateOf(storage: StorageAdapter, addressing: ContentAddressing): CutState {
  let s = states.get(storage);
  if (!s || s.addressing !== addressing || s.scheme !== addressing.scheme) {
    s = {
      addressing,
      scheme: addressing.scheme,
      recent: [],
      recentBytes: 0,
      nodes: new Map(),
      nodeCount: 0,
      written: new Map(),
      generation: 0,
    };
    states.set(storage, s);
  }
  return s;
}

/** Node's Buffer, when the runtime has one: a native range comparison. */
const nativeCompare = (globalThis as { Buffer?: { prototype: { compare: (...args: unknown[]) => number } } }).Buffer?.prototype.compare;

/** Whether `a[aFrom, aFrom + len)` and `b[bFrom, bFrom + len)` hold the same bytes. */
function sameRange(a: Uint8Array, aFrom: number, b: Uint8Array, bFrom: number, len: number): boolean {
  if (nativeCompare) return nativeCompare.call(a, b, bFrom, bFrom + len, aFrom, aFrom + len) === 0;
  for (let i = 0; i < len; i++) if (a[aFrom + i] !== b[bFrom + i]) return false;
  return true;
}

/**
 * Bytes of a leaf's start that find it among a recent document's leaves: 32, so that leaves
 * starting with the same member name after a long string (`,"rev":0},{"id":`) differ by what
 * follows it (an id), mostly.
 */
const PROBE_BYTES = 32;

/**
 * A hash of a leaf's first bytes (a leaf holding fewer is never looked up: it is too short to
 * matter): FNV-1a kept to 30 bits, a small integer the engine stores in a map without boxing. A
 * collision costs a comparison.
 */
function probeAt(bytes: Uint8Array, at: number): number | undefined {
  if (at + PROBE_BYTES > bytes.length) return undefined;
  let h = 0x811c9dc5;
  for (let i = at; i < at + PROBE_BYTES; i++) h = Math.imul(h ^ bytes[i]!, 0x01000193);
  return (h ^ (h >>> 30)) & 0x3fffffff;
}

/**
 * Leaf indexes of a recent document by their first bytes: the first leaf with them, and in
 * `more` the others, in document order. Several leaves share them where a leaf that starts after
 * a long string's closing quote starts with the same member name and what follows it as its
 * neighbours do; a list per key would cost an array per leaf.
 */
interface Probes {
  readonly first: Map<number, number>;
  readonly more: Map<number, number[]>;
}

function probesOf(doc: CutDocument): Probes {
  if (doc.probes) return doc.probes;
  const probes: Probes = { first: new Map(), more: new Map() };
  for (let j = 0; j < doc.ends.length; j++) {
    const key = probeAt(doc.bytes, j === 0 ? 0 : doc.ends[j - 1]!);
    if (key === undefined) continue;
    if (!probes.first.has(key)) probes.first.set(key, j);
    else {
      const list = probes.more.get(key);
      if (list) list.push(j);
      else probes.more.set(key, [probes.first.get(key)!, j]);
    }
  }
  return (doc.probes = probes);
}

/**
 * Whether leaf `j` of `doc` is the leaf of `bytes` that starts at `at`: the same bytes, followed
 * by the same {@link LEAF_LOOKAHEAD} bytes (a boundary looks that far ahead), or by the same
 * fewer bytes up to where both documents end.
 */
function leafMatches(doc: CutDocument, j: number, bytes: Uint8Array, at: number): boolean {
  const start = j === 0 ? 0 : doc.ends[j - 1]!;
  const end = doc.ends[j]!;
  const after = Math.min(LEAF_LOOKAHEAD, doc.bytes.length - end);
  const len = end - start + after;
  if (at + len > bytes.length) return false;
  // Fewer bytes followed it than a boundary looks at: `bytes` must end there too.
  if (after < LEAF_LOOKAHEAD && at + len !== bytes.length) return false;
  return sameRange(bytes, at, doc.bytes, start, len);
}

/** The leaves of `bytes`: ends and ids (undefined where a leaf is new and must be hashed). */
interface LeafPlan {
  readonly ends: number[];
  readonly ids: (string | undefined)[];
  /** The recent document most leaves were taken from: this version replaces it. */
  readonly base: CutDocument | undefined;
  /** Every recent document a leaf was taken from. */
  readonly from: readonly CutDocument[];
}

/** Candidates tried per recent document when several of its leaves start with the same bytes. */
const CANDIDATES_TRIED = 4;

/** The index in `list` (leaf indexes, ascending) of the leaf starting nearest to offset `near` of `doc`. */
function nearestCandidate(doc: CutDocument, list: readonly number[], near: number): number {
  let lo = 0;
  let hi = list.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (doc.ends[list[mid]!]! <= near) lo = mid + 1;
    else hi = mid;
  }
  // `lo` is the first leaf ending past `near`: it or the one before starts nearest.
  const j = list[lo]!;
  const start = j === 0 ? 0 : doc.ends[j - 1]!;
  return lo > 0 && start - near > near - doc.ends[list[lo - 1]!]! ? lo - 1 : lo;
}

/**
 * A leaf of a recent document that `bytes` holds at `at`, found by its first bytes. Where several
 * leaves start with those bytes, the ones starting nearest to `at + shift` (where the previous
 * match sat, as an offset of the recent document) are tried first, a few at most: a new version
 * moves its unchanged leaves by the length of its changes, so the right one is almost always
 * the nearest, and a miss only costs a leaf cut and hashed again.
 */
function findLeaf(
  recent: readonly CutDocument[],
  bytes: Uint8Array,
  at: number,
  shift: number,
): { doc: CutDocument; j: number } | undefined {
  const key = probeAt(bytes, at);
  if (key === undefined) return undefined;
  for (const doc of recent) {
    const probes = probesOf(doc);
    const first = probes.first.get(key);
    if (first === undefined) continue;
    const list = probes.more.get(key);
    if (list === undefined) {
      if (leafMatches(doc, first, bytes, at)) return { doc, j: first };
      continue;
    }
    // Outward from the nearest: right, left, right, ...
    const mid = nearestCandidate(doc, list, at + shift);
    for (let k = 0, lo = mid - 1, hi = mid; k < CANDIDATES_TRIED && (lo >= 0 || hi < list.length); k++) {
      const useHi = hi < list.length && (lo < 0 || k % 2 === 0);
      const j = useHi ? list[hi++]! : list[lo--]!;
      if (leafMatches(doc, j, bytes, at)) return { doc, j };
    }
  }
  return undefined;
}

/** The index of the leaf of `doc` that starts at `offset`, or -1. */
function leafStartingAt(doc: CutDocument, offset: number): number {
  const { ends } = doc;
  if (offset === 0) return ends.length > 0 ? 0 : -1;
  let lo = 0;
  let hi = ends.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (ends[mid]! < offset) lo = mid + 1;
    else hi = mid;
  }
  return ends[lo] === offset && lo + 1 < ends.length ? lo + 1 : -1;
}

/** Where the cut stands against the recent document it last took a leaf from (one per cut, changed as it goes). */
interface Follow {
  /** That document (undefined before the first leaf taken). */
  doc: CutDocument | undefined;
  /** Its leaf after the last one taken. */
  next: number;
  /** Leaves and bytes cut new since the last leaf taken. */
  cutLeaves: number;
  cutBytes: number;
  /** Where the last leaf taken sat in its document, less where it sits in the new bytes. */
  shift: number;
  /** Leaves taken from each recent document, but the current run. */
  readonly taken: Map<CutDocument, number>;
  /** Leaves taken from `doc` in a row. */
  run: number;
}

/**
 * After leaves cut new, the leaf of `follow.doc` that `bytes` holds at `at`, tried where an edit
 * leaves it, without the probes: as many leaves on as were cut new since (an item replaced by one
 * of as many leaves), at the same shift (one replaced by as many bytes), or the next one (an
 * insertion). Building the probes of every version (a hash and a map entry per leaf) cost more
 * than the rest of finding its few changes.
 */
function resumeLeaf(follow: Follow, doc: CutDocument, bytes: Uint8Array, at: number): number {
  const { next } = follow;
  const n = doc.ends.length;
  const byCount = next + follow.cutLeaves;
  if (byCount < n && leafMatches(doc, byCount, bytes, at)) return byCount;
  const byShift = leafStartingAt(doc, at + follow.shift);
  if (byShift >= 0 && byShift !== byCount && leafMatches(doc, byShift, bytes, at)) return byShift;
  if (next < n && next !== byCount && next !== byShift && leafMatches(doc, next, bytes, at)) return next;
  return -1;
}

/**
 * Leaves and bytes cut new after the last leaf taken before the probes are looked at: an edit's
 * leaves and those around it whose lookahead it changed are cut new anyway, and a leaf the
 * probes would have found is only hashed again (its id is known written: it is not written again).
 */
const RESUME_LEAVES = 8;
const RESUME_BYTES = 8 * 1024;

/**
 * The leaf of a recent document that `bytes` holds at `at`: where the last document taken from
 * goes on ({@link resumeLeaf}); at the start, the first leaf of a recent document; else found by
 * the probes, once {@link RESUME_LEAVES} leaves or {@link RESUME_BYTES} bytes were cut new since
 * the last leaf taken.
 */
function leafAt(state: CutState, follow: Follow, bytes: Uint8Array, at: number): { doc: CutDocument; j: number } | undefined {
  const doc = follow.doc;
  if (doc) {
    // With no leaf cut new since, the next leaf was just found not to follow (`followingLeaves`).
    const j = follow.cutLeaves > 0 ? resumeLeaf(follow, doc, bytes, at) : -1;
    if (j >= 0) return { doc, j };
    if (follow.cutLeaves < RESUME_LEAVES && follow.cutBytes < RESUME_BYTES) return undefined;
  } else if (at === 0) {
    for (const d of state.recent) if (d.ends.length > 0 && leafMatches(d, 0, bytes, 0)) return { doc: d, j: 0 };
  }
  return state.recent.length > 0 ? findLeaf(state.recent, bytes, at, follow.shift) : undefined;
}

/** Counts the run of leaves taken from `follow.doc` in `taken`. */
function endRun(follow: Follow): void {
  if (follow.doc && follow.run > 0) follow.taken.set(follow.doc, (follow.taken.get(follow.doc) ?? 0) + follow.run);
  follow.run = 0;
}

/** The ids `plan` takes from recent documents. */
const reusedIds = (plan: LeafPlan): string[] => plan.ids.filter((id): id is string => id !== undefined);

/**
 * Cuts `bytes` into leaves as `leafBoundaries` does, taking a leaf of a recent document (and
 * the ones after it, while they match) wherever the cut reaches the first bytes of one.
 */
function planLeaves(state: CutState, bytes: Uint8Array): LeafPlan {
  const ends: number[] = [];
  const ids: (string | undefined)[] = [];
  const follow: Follow = { doc: undefined, next: 0, cutLeaves: 0, cutBytes: 0, shift: 0, taken: new Map(), run: 0 };
  for (let at = 0; at < bytes.length;) {
    // The leaves of the document the previous one came from that follow on, all at once.
    const doc = follow.doc;
    const run = doc && follow.cutLeaves === 0 ? followingLeaves(doc, follow.next, bytes, at) : 0;
    if (run > 0) {
      at = take(follow, doc!, follow.next, run, ends, ids);
      continue;
    }
    const found = leafAt(state, follow, bytes, at);
    if (found) {
      if (found.doc !== doc) endRun(follow);
      at = take(follow, found.doc, found.j, 1, ends, ids);
      continue;
    }
    const from = at;
    ends.push((at = nextLeafEnd(bytes, at)));
    ids.push(undefined);
    follow.cutLeaves++;
    follow.cutBytes += at - from;
  }
  endRun(follow);
  let base: CutDocument | undefined;
  for (const [d, n] of follow.taken) if (!base || n > follow.taken.get(base)!) base = d;
  return { ends, ids, base, from: [...follow.taken.keys()] };
}

/** Takes `count` leaves of `doc` from leaf `j` on into the plan (`ends`, `ids`); returns where they end in the new bytes. */
function take(follow: Follow, doc: CutDocument, j: number, count: number, ends: number[], ids: (string | undefined)[]): number {
  const shift = (j === 0 ? 0 : doc.ends[j - 1]!) - (ends.length === 0 ? 0 : ends[ends.length - 1]!);
  for (let i = j; i < j + count; i++) {
    ends.push(doc.ends[i]! - shift);
    ids.push(doc.ids[i]!);
  }
  follow.doc = doc;
  follow.next = j + count;
  follow.shift = shift;
  follow.cutLeaves = follow.cutBytes = 0;
  follow.run += count;
  return doc.ends[j + count - 1]! - shift;
}

/**
 * How many leaves of `doc` from leaf `j` on `bytes` holds one after the other from `at` (each
 * as {@link leafMatches} takes it). Leaves `j` to `m - 1` all match when the bytes from `at`
 * are `doc`'s from leaf `j`'s start to leaf `m - 1`'s end and the lookahead after it (each
 * leaf's lookahead before lies in that span), and `bytes` end where `doc` does if that
 * lookahead is short: so the count is found by comparing spans that double, then halve, each
 * only past the bytes already found equal (a comparison a leaf would cost a call each, and
 * compare each lookahead twice).
 */
function followingLeaves(doc: CutDocument, j: number, bytes: Uint8Array, at: number): number {
  const n = doc.ends.length;
  if (j >= n) return 0;
  const length = doc.bytes.length;
  const shift = (j === 0 ? 0 : doc.ends[j - 1]!) - at;
  // `doc`'s bytes up to here are known to be in `bytes` (at `shift` less).
  let equal = shift + at;
  const matches = (m: number): boolean => {
    const short = doc.ends[m - 1]! + LEAF_LOOKAHEAD > length;
    const end = short ? length : doc.ends[m - 1]! + LEAF_LOOKAHEAD;
    if (end - shift > bytes.length || (short && end - shift !== bytes.length)) return false;
    if (end > equal && !sameRange(bytes, equal - shift, doc.bytes, equal, end - equal)) return false;
    if (end > equal) equal = end;
    return true;
  };
  let good = j;
  let bad = n + 1;
  for (let step = 1; good < n; step *= 2) {
    const m = Math.min(n, good + step);
    if (!matches(m)) {
      bad = m;
      break;
    }
    good = m;
  }
  while (bad - good > 1 && bad <= n) {
    const mid = (good + bad) >> 1;
    if (matches(mid)) good = mid;
    else bad = mid;
  }
  return good - j;
}

/** Remembers `doc` as the newest of its lineage (it replaces `base`), within the bounds. */
function remember(state: CutState, doc: CutDocument, base: CutDocument | undefined): void {
  const at = base ? state.recent.indexOf(base) : -1;
  if (at >= 0) {
    state.recent.splice(at, 1);
    state.recentBytes -= base!.bytes.length;
  }
  state.recent.unshift(doc);
  state.recentBytes += doc.bytes.length;
  while (state.recent.length > RECENT_MAX || (state.recentBytes > RECENT_BYTES && state.recent.length > 1))
    state.recentBytes -= state.recent.pop()!.bytes.length;
}

/**
 * The pieces of one document's tree, in the order chunkDocument lists them: leaves, then each
 * level of nodes. A leaf taken from a recent document is never written: the caller takes the
 * writes of a tree only where this process wrote every such leaf (see `wroteAll`), so neither
 * its bytes nor whether it was written are looked at again. The other pieces keep what makes
 * their bytes, made only for those written.
 */
class Tree {
  /** Every id the tree holds, in order (repeats included). */
  readonly ids: string[] = [];
  /** The pieces that may need writing: a new leaf's bytes, or a node's children. */
  readonly fresh: { readonly id: string; readonly leaf?: Uint8Array; readonly children?: readonly string[] }[] = [];
  constructor(
    readonly state: CutState,
    readonly total: number,
    readonly edges: string | undefined,
  ) {}
  reused(id: string): void {
    this.ids.push(id);
  }
  leaf(id: string, bytes: Uint8Array): void {
    this.ids.push(id);
    this.fresh.push({ id, leaf: bytes });
  }
  node(id: string, children: readonly string[]): void {
    this.ids.push(id);
    this.fresh.push({ id, children });
  }
  /** The document: its envelope, and the chunks not `stored` yet (none without `stored`: a cut only remembered). */
  finish(depth: number, ids: readonly string[], stored: IsStored | undefined): ChunkedDocument {
    const writes: ChunkWrite[] = [];
    const written = new Set<string>();
    if (stored) {
      for (const { id, leaf, children } of this.fresh) {
        if (written.has(id) || stored(id)) continue;
        written.add(id);
        const bytes = leaf ? storedChunk(this.state.addressing, leaf, true) : encodeNode(children!);
        writes.push({ id, key: chunkKey(id), bytes });
      }
    }
    const envelope = encodeEnvelope({ bytes: this.total, depth, ids, scheme: this.state.addressing.scheme }, this.edges);
    const all = this.ids;
    // Made when asked (the writer asks only for the writes): a set of every id per version costs as much as finding them.
    return {
      envelope,
      writes,
      get ids() {
        return [...new Set(all)];
      },
    };
  }
}

/** Whether a chunk is known stored, so that a document's write leaves it out. */
type IsStored = (id: string) => boolean;

/** A node this process hashed: the ids it lists, and its own. */
interface KnownNode {
  readonly children: readonly string[];
  readonly id: string;
}

/**
 * A node's id from the cache, found by its first and last children's ids and checked child by
 * child (the ids of a version's unchanged leaves are the very strings of the version before, so
 * most checks compare references). Not by its first child alone: a chunk repeated all through a
 * document (the `,"` between the items of a list) starts many nodes, which would evict one another
 * at every version. Not by its ids joined:
 * a key of up to 64 ids made and hashed per node cost more than the rest of a node's work.
 */
function knownNode(state: CutState, group: readonly string[]): string | undefined {
  const known = state.nodes.get(group[0]!)?.get(group[group.length - 1]!);
  if (!known || known.children.length !== group.length) return undefined;
  for (let i = 0; i < group.length; i++) if (known.children[i] !== group[i]) return undefined;
  return known.id;
}

function learnNode(state: CutState, group: readonly string[], id: string): string {
  const first = group[0]!;
  const last = group[group.length - 1]!;
  let byLast = state.nodes.get(first);
  if (byLast) state.nodes.delete(first);
  else byLast = new Map();
  state.nodes.set(first, byLast);
  if (!byLast.has(last)) state.nodeCount++;
  byLast.set(last, { children: group, id });
  // The nodes starting with the child least recently seen first go, all at once.
  while (state.nodeCount > NODES_MAX) {
    const [oldest, nodes] = state.nodes.entries().next().value!;
    state.nodes.delete(oldest);
    state.nodeCount -= nodes.size;
  }
  return id;
}

/**
 * The id of a node the cache does not hold (`buildTree` asks only after {@link knownNode}
 * missed), hashed and learnt; `undefined` when the addressing cannot hash synchronously.
 */
function newNodeIdSync(state: CutState, group: readonly string[]): string | undefined {
  const id = state.addressing.idSync?.(encodeNode(group));
  return id === undefined ? undefined : learnNode(state, group, id);
}

async function newNodeId(state: CutState, group: readonly string[]): Promise<string> {
  return newNodeIdSync(state, group) ?? learnNode(state, group, await state.addressing.id(encodeNode(group)));
}

/** What building a tree asks for: the id of a new leaf (its bytes) or of a node (its children). */
type IdRequest = { readonly leaf: Uint8Array } | { readonly group: readonly string[] };

/** A tree built: its pieces, the leaf ids in order, those new in it, and its root level. */
interface BuiltTree {
  readonly tree: Tree;
  readonly ids: readonly string[];
  readonly fresh: readonly string[];
  readonly depth: number;
  readonly level: readonly string[];
}

/**
 * Leaves and nodes of the middle `bytes`: the document as chunkDocument stores it. Each id not
 * known yet is asked of the driver (`finishSync` answers synchronously, `finishAsync` awaits), so
 * that both build the very same tree.
 */
function* buildTree(state: CutState, bytes: Uint8Array, plan: LeafPlan, split: DocumentSplit): Generator<IdRequest, BuiltTree, string> {
  const tree = new Tree(state, split.total, split.edges);
  const ids: string[] = [];
  const fresh: string[] = [];
  for (let i = 0, start = 0; i < plan.ends.length; start = plan.ends[i++]!) {
    let id = plan.ids[i];
    if (id !== undefined) tree.reused(id);
    else {
      const leaf = bytes.subarray(start, plan.ends[i]!);
      id = yield { leaf };
      tree.leaf(id, leaf);
      fresh.push(id);
    }
    ids.push(id);
  }
  let level = ids;
  let depth = 0;
  while (needsLevel(level, split.fanout)) {
    const next: string[] = [];
    for (const group of nodeGroups(level, split.fanout)) {
      // A node known from an earlier version costs no round through the driver.
      const id = knownNode(state, group) ?? (yield { group });
      tree.node(id, group);
      next.push(id);
    }
    level = next;
    depth++;
  }
  return { tree, ids, fresh, depth, level };
}

/** Remembers the built document (`kept`: its bytes, not to be changed again) and makes its envelope and the writes of the chunks not `stored`. */
function settle(
  state: CutState,
  kept: Uint8Array,
  plan: LeafPlan,
  built: BuiltTree,
  written: WrittenSince | undefined,
  stored: IsStored | undefined,
): ChunkedDocument {
  remember(state, { bytes: kept, ends: plan.ends, ids: built.ids, written: written && { ...written, except: built.fresh } }, plan.base);
  return built.tree.finish(built.depth, built.level, stored);
}

/** `bytes` as they may be kept: themselves when `fixed` (handed over: nothing changes them), else a copy (the caller's buffer may be reused). */
const keepable = (bytes: Uint8Array, fixed: boolean): Uint8Array => (fixed ? bytes : bytes.slice());

/**
 * {@link buildTree} with every id made synchronously; undefined when the addressing cannot.
 * `bytes` is remembered as it is when `fixed` (a view of a buffer handed over, which nothing
 * changes), else as a copy (the caller's buffer may be reused: the saver's seal buffer).
 */
function finishSync(
  state: CutState,
  bytes: Uint8Array,
  fixed: boolean,
  plan: LeafPlan,
  split: DocumentSplit,
  written: WrittenSince | undefined,
  stored: IsStored | undefined,
): ChunkedDocument | undefined {
  const steps = buildTree(state, bytes, plan, split);
  for (let step = steps.next(); ;) {
    if (step.done) return settle(state, keepable(bytes, fixed), plan, step.value, written, stored);
    const ask = step.value;
    const id = 'leaf' in ask ? state.addressing.idSync?.(ask.leaf) : newNodeIdSync(state, ask.group);
    if (id === undefined) return undefined;
    step = steps.next(id);
  }
}

/** {@link buildTree} with ids awaited; `bytes` is a copy of the caller's, kept as it is. */
async function finishAsync(
  state: CutState,
  bytes: Uint8Array,
  plan: LeafPlan,
  split: DocumentSplit,
  written: WrittenSince | undefined,
  stored: IsStored | undefined,
): Promise<ChunkedDocument> {
  const steps = buildTree(state, bytes, plan, split);
  for (let step = steps.next(); ;) {
    if (step.done) return settle(state, bytes, plan, step.value, written, stored);
    const ask = step.value;
    step = steps.next('leaf' in ask ? await state.addressing.id(ask.leaf) : await newNodeId(state, ask.group));
  }
}

/** Whether this process wrote a chunk of `state` within the trust window. */
function writtenTest(state: CutState): IsStored {
  const now = Date.now();
  return (id) => writtenAt(state, id, now) !== undefined;
}

/**
 * `bytes` as a chunked document of `storage`: the same envelope and chunks as `chunkDocument`,
 * without hashing again the leaves a recent version of the document shares with it. Without a
 * promise when the store's addressing hashes synchronously here.
 */
export function cutDocument(storage: StorageAdapter, bytes: Uint8Array, fanout = NODE_FANOUT): ChunkedDocument | Promise<ChunkedDocument> {
  const addressing = addressingOf(storage);
  const state = stateOf(storage, addressing);
  // Only the middle is remembered and cut: the edges go to the envelope (codec/chunk-edges.ts).
  const split = splitDocument(addressing, bytes, fanout);
  const middle = split.middle;
  const plan = planLeaves(state, middle);
  const written = plan.base && wroteAll(state, plan);
  // A document handed over never changes: its middle is remembered as it is, not copied.
  const fixed = isHandedOver(bytes);
  if (written) {
    const test = writtenTest(state);
    // Copied for the async path: the caller's buffer may be reused once this awaits (the saver's seal buffer).
    return (
      finishSync(state, middle, fixed, plan, split, written, test) ??
      finishAsync(state, keepable(middle, fixed), plan, split, written, test)
    );
  }
  if (!plan.base) {
    // Nothing taken from a recent document: every leaf was cut and hashed here, as chunkDocument
    // would, and what it writes is what the store is not known to hold (written or read).
    const known = knownChunkTest(storage);
    return (
      finishSync(state, middle, fixed, plan, split, undefined, known) ??
      finishAsync(state, keepable(middle, fixed), plan, split, undefined, known)
    );
  }
  // Leaves taken that this process did not write (it read them, after a restart): chunkDocument
  // knows what was read. This cut is only kept for the next version.
  const mine = finishSync(state, middle, fixed, plan, split, undefined, undefined);
  const stored = chunkSplit(storage, addressing, split);
  if (mine || !(stored instanceof Promise)) return stored;
  const copy = keepable(middle, fixed);
  return stored.then(async (doc) => {
    await finishAsync(state, copy, plan, split, undefined, undefined);
    return doc;
  });
}

/** Whether this process wrote `id` within the trust window: when, else undefined. */
function writtenAt(state: CutState, id: string, now: number): number | undefined {
  const at = state.written.get(id);
  return at !== undefined && now - at < KNOWN_CHUNK_TTL_MS ? at : undefined;
}

/** The oldest write of `ids` by this process, `since` at most; undefined when one is not known written within the trust window. */
function oldestWrite(state: CutState, ids: readonly string[], since: number, now: number): number | undefined {
  for (const id of ids) {
    const at = writtenAt(state, id, now);
    if (at === undefined) return undefined;
    if (at < since) since = at;
  }
  return since;
}

/**
 * The oldest write by this process of `doc`'s leaves, when it wrote every one within the trust
 * window. A version is taken mostly from the version before, whose leaves were found written when
 * it was cut: only its new leaves are looked up (and then none, the answer being kept), unless that
 * finding expired or an id left `written` since (a sweep hid it, or the bound on remembered ids
 * dropped it). Looking up each of hundreds of leaves per version cost more than cutting the few
 * that changed.
 */
function allWritten(state: CutState, doc: CutDocument, now: number): number | undefined {
  const known = doc.written;
  const valid = known !== undefined && known.generation === state.generation && now - known.since < KNOWN_CHUNK_TTL_MS;
  const since = valid ? oldestWrite(state, known.except, known.since, now) : oldestWrite(state, doc.ids, now, now);
  if (since !== undefined && (!valid || known.except.length > 0)) doc.written = { since, generation: state.generation, except: [] };
  return since;
}

/** What is known of the leaves `plan` takes from recent documents, when this process wrote every one within the trust window. */
function wroteAll(state: CutState, plan: LeafPlan): WrittenSince | undefined {
  const now = Date.now();
  let since: number | undefined = now;
  for (const doc of plan.from) {
    const at = allWritten(state, doc, now);
    if (at === undefined) {
      since = undefined;
      break;
    }
    since = Math.min(since, at);
  }
  // A recent document with a leaf not known written: the leaves taken may all be, still.
  since ??= oldestWrite(state, reusedIds(plan), now, now);
  return since === undefined ? undefined : { since, generation: state.generation, except: [] };
}

/** Records that the chunks `ids` are stored now, by this process (call only once the write holding them is durable). */
export function rememberWritten(storage: StorageAdapter, ids: readonly string[]): void {
  const state = states.get(storage);
  if (!state || ids.length === 0) return;
  const now = Date.now();
  for (const id of ids) {
    state.written.delete(id);
    state.written.set(id, now);
  }
  if (state.written.size <= WRITTEN_MAX) return;
  while (state.written.size > WRITTEN_MAX) state.written.delete(state.written.keys().next().value!);
  state.generation++;
}

/** Forgets that this process wrote the chunks `ids` of `storage` (a sweep of this process hid them), or every chunk. */
export function forgetWritten(storage: StorageAdapter, ids?: Iterable<string>): void {
  const state = states.get(storage);
  if (!state) return;
  if (!ids) state.written.clear();
  else for (const id of ids) state.written.delete(id);
  state.generation++;
}
