import crypto, { createHash, randomInt } from 'node:crypto';

/*
 * Record: "SPJ2" (or "SPJ3" when it holds a move) | u32 body length | u32 epoch | first 8 bytes of sha256(epoch | body) | body,
 * where body is u32 JSON length | JSON [["p", key, length, version] | ["d", key], …] | the
 * puts' bytes in order (records of earlier versions have no put version). A record whose
 * length or hash does not match (a torn write) ends the journal, and so does one of another
 * epoch.
 *
 * A move is ["m", from, to, version]: the file of `from` renamed to `to`, its bytes not in the
 * record (the record also deletes `from`). A record that holds one starts "SPJ3", which
 * versions before the move stop at as at a torn record, instead of reading the move as a
 * delete of its source and losing the bytes.
 */

export const MAGIC = 0x53504a32; // "SPJ2"
/** The magic of a record that holds a move (see above). */
export const MOVE_MAGIC = 0x53504a33; // "SPJ3"
/** Whether `word` starts a record (of either kind). */
export const isMagic = (word: number): boolean => word === MAGIC || word === MOVE_MAGIC;
/** Bytes of a record's header (magic, body length, epoch, seal). */
export const HEADER = 20;
/** A fresh epoch (a nonzero u32): the epoch of the records an emptied journal file takes next. */
export const newEpoch = (): number => randomInt(1, 0xffffffff);
/** The epoch of the file commits go to after a switch: the one after the full file's, so replay knows their order. */
export const nextEpoch = (epoch: number): number => (epoch >= 0xffffffff ? 1 : epoch + 1);

/** A put (key, length of its bytes, and — since apply-after-acknowledge — its version), a delete, or a move (from, to, to's version). */
export type JournalOp =
  readonly ['p', string, number] | readonly ['p', string, number, string] | readonly ['d', string] | readonly ['m', string, string, string];

/** A record's seal: the first 8 bytes of sha256 over its epoch field and its body. */
function seal(epochField: Uint8Array, body: Uint8Array): Buffer {
  const hash = createHash('sha256');
  hash.update(epochField);
  hash.update(body);
  return hash.digest().subarray(0, 8);
}

/** crypto.hash (Node ≥ 20.12): a one-shot digest without a Hash object. */
const oneShot: ((algorithm: string, data: Uint8Array, encoding: 'buffer') => Buffer) | undefined =
  typeof crypto.hash === 'function' ? crypto.hash : undefined;

/**
 * Seals the record `out` in place (see {@link seal}). On the commit path a Hash object cost
 * ~35 µs after an idle moment, a one-shot digest ~13 µs: the epoch field is copied into the
 * seal's last four bytes, right before the body, so that epoch | body is one contiguous
 * range to digest; the seal then overwrites it.
 */
function sealInPlace(out: Buffer): void {
  if (!oneShot) {
    out.set(seal(out.subarray(8, 12), out.subarray(HEADER)), 12);
    return;
  }
  out.copyWithin(HEADER - 4, 8, 12);
  out.set(oneShot('sha256', out.subarray(HEADER - 4), 'buffer').subarray(0, 8), 12);
}

/** Encodes one record of journal epoch `epoch` (a nonzero u32). */
export function encodeRecord(ops: readonly JournalOp[], payloads: readonly Uint8Array[], epoch = 1): Uint8Array {
  // The JSON text is encoded straight into the record (no intermediate buffer).
  const json = JSON.stringify(ops);
  const jsonLength = Buffer.byteLength(json, 'utf8');
  let bodyLength = 4 + jsonLength;
  for (const p of payloads) bodyLength += p.length;
  const out = Buffer.allocUnsafe(HEADER + bodyLength);
  out.writeUInt32BE(ops.some((op) => op[0] === 'm') ? MOVE_MAGIC : MAGIC, 0);
  out.writeUInt32BE(bodyLength, 4);
  out.writeUInt32BE(epoch, 8);
  out.writeUInt32BE(jsonLength, HEADER);
  out.write(json, HEADER + 4, 'utf8');
  let at = HEADER + 4 + jsonLength;
  for (const p of payloads) {
    out.set(p, at);
    at += p.length;
  }
  sealInPlace(out);
  return out;
}

/** One decoded record: its operations with their bytes. */
export interface DecodedRecord {
  readonly ops: readonly (
    | { readonly type: 'put'; readonly key: string; readonly bytes: Uint8Array; readonly version?: string }
    | { readonly type: 'delete'; readonly key: string }
    /** `key` is the move's target; the file of `from` (its inode named in `version`) holds the bytes. */
    | { readonly type: 'move'; readonly key: string; readonly from: string; readonly version: string }
  )[];
}

/** What {@link decodeJournal} found. */
export interface DecodedJournal {
  readonly records: DecodedRecord[];
  /** Where the last whole record ends (where the next one goes). */
  readonly end: number;
  /** The records' epoch (undefined when there is none). */
  readonly epoch?: number;
  /** Bytes of a torn record of the same epoch right after `end` (0 when the journal just ends there). */
  readonly torn: number;
  /** Where the last whole record starts (0 when there is none). */
  readonly lastStart: number;
  /** When the record after `end` goes past the bytes given: how many bytes from the start would hold it. */
  readonly wants?: number;
}

/** Decodes the whole records of one epoch (the first record's, or `expectEpoch`) at the start of `bytes`. */
export function decodeJournal(bytes: Uint8Array, expectEpoch?: number): DecodedJournal {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const records: DecodedRecord[] = [];
  let at = 0;
  let lastStart = 0;
  let epoch: number | undefined = expectEpoch;
  const sameEpoch = (pos: number): boolean => epoch === undefined || buf.readUInt32BE(pos + 8) === epoch;
  while (at + HEADER <= buf.length) {
    if (!isMagic(buf.readUInt32BE(at)) || !sameEpoch(at)) break;
    const length = buf.readUInt32BE(at + 4);
    if (length < 4 || at + HEADER + length > buf.length) break;
    const body = buf.subarray(at + HEADER, at + HEADER + length);
    if (!seal(buf.subarray(at + 8, at + 12), body).equals(buf.subarray(at + 12, at + HEADER))) break;
    try {
      const jsonLength = body.readUInt32BE(0);
      const ops = JSON.parse(body.subarray(4, 4 + jsonLength).toString('utf8')) as JournalOp[];
      let p = 4 + jsonLength;
      const decoded: DecodedRecord['ops'][number][] = [];
      for (const op of ops) {
        if (op[0] === 'p') {
          const version = op[3];
          decoded.push({
            type: 'put',
            key: op[1],
            bytes: new Uint8Array(body.subarray(p, p + op[2])),
            ...(typeof version === 'string' ? { version } : {}),
          });
          p += op[2];
        } else if (op[0] === 'm') decoded.push({ type: 'move', key: op[2], from: op[1], version: op[3] });
        else decoded.push({ type: 'delete', key: op[1] });
      }
      records.push({ ops: decoded });
    } catch {
      break;
    }
    epoch ??= buf.readUInt32BE(at + 8);
    lastStart = at;
    at += HEADER + length;
  }
  let torn = 0;
  let wants: number | undefined;
  if (at + HEADER <= buf.length && isMagic(buf.readUInt32BE(at)) && sameEpoch(at)) {
    const whole = HEADER + buf.readUInt32BE(at + 4);
    torn = Math.min(whole, buf.length - at);
    if (whole > buf.length - at) wants = at + whole;
  }
  return { records, end: at, ...(epoch === undefined ? {} : { epoch }), torn, lastStart, ...(wants === undefined ? {} : { wants }) };
}

/** The keys a decoded journal file names. */
export const keysOf = (found: DecodedJournal): Set<string> => new Set(found.records.flatMap((r) => r.ops.map((o) => o.key)));
