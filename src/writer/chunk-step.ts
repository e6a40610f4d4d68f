import type { StorageAdapter } from '../contract/storage.js';
import { cutDocument, rememberWritten } from '../snapshot-io/chunk-cut.js';
import { isChunkable, isPackable, packWhole, rememberChunks, type ChunkedDocument } from '../snapshot-io/chunk-store.js';
import type { CreateOp, PutOp, ReplaceOp, WritePlan } from './ordered-write.js';

/** A plan whose documents marked `chunk` are stored as content chunks, and the chunk ids they reference. */
export interface ChunkedPlan {
  readonly plan: WritePlan;
  /**
   * The chunks the plan writes: known stored once it is durable. Only what was written (or read)
   * counts as known, never a chunk merely referenced again: the sweep's grace rule rests on it.
   */
  readonly ids: readonly string[];
}

type Chunked = ChunkedDocument | Promise<ChunkedDocument>;

/** A document of a plan that may be stored as chunks. */
interface ChunkableOp {
  readonly bytes: Uint8Array;
  readonly chunk?: boolean;
  readonly chunkFrom?: number;
  readonly chunkFanout?: number;
  readonly packWhole?: boolean;
}

/** How `op` is stored: as chunks, whole in an envelope (`packWhole`), or as it is (undefined). */
function formOf(op: ChunkableOp): 'chunks' | 'whole' | undefined {
  if (op.chunk !== true) return undefined;
  if (isChunkable(op.bytes, op.chunkFrom)) return 'chunks';
  return op.packWhole === true && isPackable(op.bytes) ? 'whole' : undefined;
}

/** Whether `op` is a document to be stored as chunks or whole in an envelope. */
const big = (op: ChunkableOp): boolean => formOf(op) !== undefined;

/** Whether any document of `plan` is to be stored as chunks (the saver's every put and putWrites asks: no closure is made per call). */
function wantsChunks(plan: WritePlan): boolean {
  if (plan.latest && big(plan.latest)) return true;
  for (const c of plan.creates) if (big(c)) return true;
  for (const r of plan.replaces) if (big(r)) return true;
  if (plan.puts) for (const p of plan.puts) if (big(p)) return true;
  return false;
}

/** Documents of one plan chunked once each (`latest` is the newest history entry's very bytes). */
class PlanChunker {
  readonly done = new Map<Uint8Array, Chunked>();
  constructor(readonly storage: StorageAdapter) {}
  add(bytes: Uint8Array, form: 'chunks' | 'whole', fanout?: number): void {
    if (!this.done.has(bytes))
      this.done.set(bytes, form === 'whole' ? packWhole(this.storage, bytes) : cutDocument(this.storage, bytes, fanout));
  }
}

/** The plan with its chunked documents' envelopes in place and their new chunks first (synchronous: every document chunked without a promise). */
function assemble(plan: WritePlan, envelopes: Map<Uint8Array, ChunkedDocument>): ChunkedPlan {
  const chunks: PutOp[] = [];
  const seen = new Set<string>();
  for (const doc of envelopes.values()) {
    for (const w of doc.writes) {
      if (seen.has(w.id)) continue;
      seen.add(w.id);
      chunks.push({ key: w.key, bytes: w.bytes });
    }
  }
  const swap = <T extends { readonly bytes: Uint8Array; readonly chunk?: boolean }>(op: T): T => {
    const doc = op.chunk === true ? envelopes.get(op.bytes) : undefined;
    return doc ? { ...op, bytes: doc.envelope } : op;
  };
  const out: { -readonly [K in keyof WritePlan]: WritePlan[K] } = {
    ...plan,
    creates: plan.creates.map((c: CreateOp) => swap(c)),
    replaces: plan.replaces.map((r: ReplaceOp) => swap(r)),
    chunks: [...(plan.chunks ?? []), ...chunks],
  };
  if (plan.puts) out.puts = plan.puts.map((p) => swap(p));
  if (plan.latest) out.latest = swap(plan.latest);
  return { plan: out, ids: [...seen] };
}

/**
 * Stores the documents of `plan` marked `chunk` (and at least {@link isChunkable}) as content
 * chunks: each becomes a small envelope naming its chunks, and the chunks this process does not
 * know to be stored already go first in the plan (`chunks`), so that no document is ever durable
 * before a chunk it references. Synchronous when the store's addressing hashes synchronously.
 */
export function chunkPlan(storage: StorageAdapter, plan: WritePlan): ChunkedPlan | Promise<ChunkedPlan> | undefined {
  if (!wantsChunks(plan)) return undefined;
  const chunker = new PlanChunker(storage);
  const visit = (op: ChunkableOp): void => {
    const form = formOf(op);
    if (form) chunker.add(op.bytes, form, op.chunkFanout);
  };
  for (const c of plan.creates) visit(c);
  for (const r of plan.replaces) visit(r);
  if (plan.puts) for (const p of plan.puts) visit(p);
  if (plan.latest) visit(plan.latest);
  let pending = false;
  for (const c of chunker.done.values()) if (c instanceof Promise) pending = true;
  if (!pending) return assemble(plan, chunker.done as Map<Uint8Array, ChunkedDocument>);
  // Awaited together: one await after another would leave a later document's failure unhandled
  // once an earlier one fails.
  const entries = [...chunker.done];
  return Promise.all(entries.map(([, c]) => c)).then((docs) => assemble(plan, new Map(entries.map(([bytes], i) => [bytes, docs[i]!]))));
}

/** Records the chunks a durable plan wrote as stored (see `rememberChunks`, `rememberWritten`). */
export function chunksDurable(storage: StorageAdapter, chunked: ChunkedPlan | undefined): void {
  if (!chunked) return;
  rememberChunks(storage, chunked.ids);
  rememberWritten(storage, chunked.ids);
}
