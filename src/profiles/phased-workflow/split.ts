import type { JsonObject, JsonValue } from '../../contract/json.js';
import { canonicalJsonBytes, canonicalJsonLength } from '../../codec/json-pieces.js';
import { PART_MARKER, PARTS_MARKER, splitDocument } from '../../codec/parts.js';
import { type PartFile, type SplitOptions, type SplitResult } from '../../contract/split.js';
import { sha256Hex } from '../../codec/sha256.js';
import { PHASE_KEYS } from './schema.js';
import { assertFunctionArgument, assertObjectArgument } from '../../contract/arguments.js';

// Measured and encoded from the canonical text's pieces: a big string is never copied to be counted.
const size = (v: JsonValue): number => canonicalJsonLength(v);
const isObject = (v: JsonValue | undefined): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);
const isRef = (v: JsonObject): boolean => {
  const keys = Object.keys(v);
  return keys.length === 1 && (keys[0] === PART_MARKER || keys[0] === PARTS_MARKER);
};

/**
 * Splits an oversized phasedWorkflow document the way the spec's `size_management`
 * says ("split large arrays (e.g., phase_outputs) into separate files, store references
 * in main checkpoint"): the largest `state_snapshot.phase_outputs` entries move to part
 * files first, one part per phase, until the main document fits in `maxBytes`; only if
 * it still does not fit does the generic {@link splitDocument} move other values (and
 * cut inside a phase output that alone exceeds `maxBytes`). Everything else of the
 * checkpoint (cost, breaker state, gate history) stays readable in the main file.
 * Part references use the core's `$savepoint_part` form, so `readSnapshot` reassembles
 * the document and checks its integrity as for any split snapshot.
 */
export async function splitPhasedWorkflowDocument(
  document: JsonObject,
  maxBytes: number,
  partKey: (n: number) => string,
  options: SplitOptions = {},
): Promise<SplitResult> {
  assertObjectArgument(document, 'splitPhasedWorkflowDocument', 'document');
  assertFunctionArgument(partKey, 'splitPhasedWorkflowDocument', 'partKey');
  if (size(document) <= maxBytes) return { main: document, parts: [] };
  const main = options.owned === true ? document : structuredClone(document);
  const parts: PartFile[] = [];
  const state = main.state_snapshot;
  const outputs = isObject(state) ? state.phase_outputs : undefined;
  if (isObject(outputs)) {
    const candidates = PHASE_KEYS.map((key) => ({ key, value: outputs[key] }))
      .filter((c): c is { key: (typeof PHASE_KEYS)[number]; value: JsonObject } => isObject(c.value) && !isRef(c.value))
      .map((c) => ({ ...c, bytes: size(c.value) }))
      .filter((c) => c.bytes <= maxBytes)
      .sort((a, b) => b.bytes - a.bytes);
    for (const c of candidates) {
      if (size(main) <= maxBytes) break;
      const data = canonicalJsonBytes(c.value);
      const part: PartFile = { key: partKey(parts.length + 1), sha256: await sha256Hex(data), bytes: data.length, data };
      parts.push(part);
      outputs[c.key] = { [PART_MARKER]: { key: part.key, sha256: part.sha256, bytes: part.bytes } } as unknown as JsonValue;
    }
  }
  if (size(main) <= maxBytes) return { main, parts };
  const rest = await splitDocument(main, maxBytes, (n) => partKey(parts.length + n), { owned: true });
  return { main: rest.main, parts: [...parts, ...rest.parts] };
}
