import { parseJson } from '../../codec/canonical-json.js';
import { utf8Decode, utf8Encode } from '../../codec/utf8.js';
import { CheckpointError } from '../../contract/errors.js';
import type { BatchOperation } from '../../contract/storage.js';
import type { QueuedWrite } from './emergency-queue.js';
import { fromBase64, toBase64 } from '../../codec/base64.js';
import { gitBlobSha } from './git-blob.js';

interface SpilledOperation {
  readonly type: 'put' | 'delete' | 'check';
  readonly key: string;
  readonly bytes?: string;
  readonly ifAbsent?: boolean;
  readonly ifVersion?: string;
}

/** A queued write as the spill stores it (`savepoint-github-queue/1`). */
interface SpilledWrite {
  readonly format: 'savepoint-github-queue/1';
  readonly seq: number;
  readonly kind: QueuedWrite['kind'];
  readonly enqueuedAtMs: number;
  readonly maybeLanded: boolean;
  readonly operations: readonly SpilledOperation[];
}

/** One operation as the spill stores it (bytes in base64; a check keeps its condition, never becomes a write). */
function spilled(op: BatchOperation): SpilledOperation {
  const cond = {
    ...(op.type !== 'delete' && op.ifAbsent ? { ifAbsent: true } : {}),
    ...(op.ifVersion !== undefined ? { ifVersion: op.ifVersion } : {}),
  };
  if (op.type === 'put') return { type: 'put', key: op.key, bytes: toBase64(op.bytes), ...cond };
  return { type: op.type, key: op.key, ...cond };
}

/** The version each put will have once stored (git blob shas). */
export async function versionsOf(operations: readonly BatchOperation[]): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const op of operations) if (op.type === 'put') out[op.key] = await gitBlobSha(op.bytes);
  return out;
}

/** The bytes the spill stores for a queued write. */
export function encodeQueuedWrite(w: QueuedWrite): Uint8Array {
  const doc: SpilledWrite = {
    format: 'savepoint-github-queue/1',
    seq: w.seq,
    kind: w.kind,
    enqueuedAtMs: w.enqueuedAtMs,
    maybeLanded: w.maybeLanded,
    operations: w.operations.map(spilled),
  };
  return utf8Encode(JSON.stringify(doc));
}

/** A queued write read back from the spill (`key` names it in errors). */
export async function decodeQueuedWrite(bytes: Uint8Array, key: string): Promise<QueuedWrite> {
  const doc = parseJson(utf8Decode(bytes, key), key) as unknown as SpilledWrite;
  if (doc.format !== 'savepoint-github-queue/1' || !Array.isArray(doc.operations)) {
    throw new CheckpointError('checkpoint_schema_invalid', `${key} is not a savepoint GitHub queue entry`, { details: { key } });
  }
  const operations: BatchOperation[] = doc.operations.map((o) => {
    const cond = { ...(o.ifAbsent ? { ifAbsent: true } : {}), ...(o.ifVersion !== undefined ? { ifVersion: o.ifVersion } : {}) };
    if (o.type === 'delete') return { type: 'delete', key: o.key, ...(o.ifVersion !== undefined ? { ifVersion: o.ifVersion } : {}) };
    if (o.type === 'check') {
      if (o.ifVersion !== undefined) return { type: 'check', key: o.key, ifVersion: o.ifVersion };
      if (o.ifAbsent === true) return { type: 'check', key: o.key, ifAbsent: true };
      throw new CheckpointError('checkpoint_schema_invalid', `${key} holds a check without a condition`, { details: { key } });
    }
    if (o.type !== 'put')
      throw new CheckpointError('checkpoint_schema_invalid', `${key} holds an operation of unknown type`, { details: { key } });
    const data = fromBase64(o.bytes ?? '');
    if (!data) throw new CheckpointError('checkpoint_schema_invalid', `${key} holds bytes that are not base64`, { details: { key } });
    return { type: 'put', key: o.key, bytes: data, ...cond };
  });
  return {
    seq: doc.seq,
    kind: doc.kind,
    operations,
    versions: await versionsOf(operations),
    enqueuedAtMs: doc.enqueuedAtMs,
    maybeLanded: doc.maybeLanded,
  };
}
