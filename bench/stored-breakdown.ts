/**
 * Where a store's bytes go, by kind (`DEDUP_BREAKDOWN=1 npm run bench -- dedup`): the sum of
 * stored values' sizes split into checkpoint envelopes (their edges apart), checkpoints stored
 * whole, writes documents, documents stored whole in an envelope, content leaves and tree nodes. Leaves and nodes are told apart by
 * walking each envelope's tree, not by their bytes.
 */
import type { StorageAdapter } from 'savepoint';
import { CHUNK_PREFIX, chunkKey, decodeEnvelope, decodeNode, encodeEnvelope } from '../src/codec/chunking.js';
import { fmt } from './harness.js';

/** How many stored values of one kind, and their bytes. */
interface KindTotal {
  count: number;
  bytes: number;
}

const KINDS = [
  'checkpoint envelopes (without edges)',
  'checkpoint envelopes: edges',
  'checkpoints stored whole',
  'writes envelopes',
  'writes documents stored whole',
  'documents stored whole in an envelope (deflated)',
  'content leaves',
  'tree nodes',
  'chunks no envelope names',
  'other (heads, indexes)',
] as const;
type Kind = (typeof KINDS)[number];

/** The kind of a document key (not a chunk): a LangGraph checkpoint, a task's writes, or anything else. */
const documentKind = (key: string): 'checkpoint' | 'writes' | 'other' =>
  key.includes('/history/') ? 'checkpoint' : key.includes('/parts/') ? 'writes' : 'other';

/** The stored bytes of `storage` by kind. */
export async function storedBreakdown(storage: StorageAdapter): Promise<Map<Kind, KindTotal>> {
  const totals = new Map<Kind, KindTotal>(KINDS.map((k) => [k, { count: 0, bytes: 0 }]));
  const add = (kind: Kind, bytes: number, count = 1): void => {
    const t = totals.get(kind)!;
    t.count += count;
    t.bytes += bytes;
  };
  const sizes = new Map<string, number>();
  const roots: { id: string; depth: number }[] = [];
  for await (const entry of storage.list('')) {
    if (entry.key.startsWith(CHUNK_PREFIX)) {
      sizes.set(entry.key, entry.size);
      continue;
    }
    const kind = documentKind(entry.key);
    const stored = kind === 'other' ? undefined : await storage.get(entry.key);
    const envelope = stored && decodeEnvelope(stored.bytes, entry.key);
    if (!envelope) {
      add(
        kind === 'checkpoint' ? 'checkpoints stored whole' : kind === 'writes' ? 'writes documents stored whole' : 'other (heads, indexes)',
        entry.size,
      );
      continue;
    }
    for (const id of envelope.ids) roots.push({ id, depth: envelope.depth });
    if (envelope.ids.length === 0) add('documents stored whole in an envelope (deflated)', entry.size);
    else if (kind === 'writes') add('writes envelopes', entry.size);
    else {
      const bare = encodeEnvelope(envelope).length;
      add('checkpoint envelopes (without edges)', bare);
      add('checkpoint envelopes: edges', entry.size - bare, 0);
    }
  }
  const seen = new Set<string>();
  for (let next = roots.pop(); next; next = roots.pop()) {
    const key = chunkKey(next.id);
    if (seen.has(key) || !sizes.has(key)) continue;
    seen.add(key);
    add(next.depth === 0 ? 'content leaves' : 'tree nodes', sizes.get(key)!);
    if (next.depth === 0) continue;
    const node = await storage.get(key);
    if (node) for (const id of decodeNode(node.bytes, next.id)) roots.push({ id, depth: next.depth - 1 });
  }
  for (const [key, size] of sizes) if (!seen.has(key)) add('chunks no envelope names', size);
  return totals;
}

/** The breakdown as lines of text: kind, count, bytes, bytes each, share of the total. */
export function breakdownLines(totals: Map<Kind, KindTotal>): string[] {
  const all = [...totals.values()].reduce((sum, t) => sum + t.bytes, 0);
  const lines = [`stored bytes by kind (total ${fmt(all / 1e6)} MB):`];
  for (const [kind, t] of totals) {
    if (t.bytes === 0) continue;
    const each = t.count > 0 ? `, ${Math.round(t.bytes / t.count)} B each` : '';
    lines.push(`  ${kind}: ${t.count > 0 ? `${t.count} × ` : ''}${fmt(t.bytes / 1e3)} KB${each} (${fmt((100 * t.bytes) / all, 2)} %)`);
  }
  return lines;
}
