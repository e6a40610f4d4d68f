import { fromBase64 } from '../codec/base64.js';
import { utf8Decode } from '../codec/utf8.js';
import type { JsonValue } from '../contract/json.js';
import type { Snapshot } from '../contract/snapshot.js';
import type { LangGraphPayload, SerializedValue } from './profile.js';

/** A value the serializer wrote in a form other than JSON (an encrypting or custom serializer): shown by type and size, never decoded. */
export interface OpaqueValue {
  readonly $serialized: string;
  readonly bytes: number;
}

/**
 * A LangGraph checkpoint as LangGraph users think of it: thread, namespace, checkpoint id, its
 * parent, the step and source LangGraph recorded, the nodes scheduled next, and each channel's
 * value decoded from the serializer's JSON (not the stored envelope).
 */
export interface LangGraphCheckpointView {
  readonly threadId: string;
  readonly checkpointNs: string;
  readonly checkpointId: string;
  readonly parentCheckpointId: string | null;
  /** `metadata.step`: -1 for the input checkpoint, then one per superstep. */
  readonly step: number | null;
  /** `metadata.source`: `input`, `loop`, `update` or `fork`. */
  readonly source: string;
  /** When LangGraph took the checkpoint (`ts`), else when savepoint stored it. */
  readonly ts: string;
  /** Nodes the checkpoint schedules (their trigger channel holds a value they have not seen); empty when the graph has finished. */
  readonly next: readonly string[];
  /** Channel name → decoded value. */
  readonly channels: Readonly<Record<string, JsonValue | OpaqueValue>>;
  /** The checkpoint's metadata (your own keys included). */
  readonly metadata: Readonly<Record<string, JsonValue>>;
}

/** The serializer's output decoded: its JSON as a value, or an {@link OpaqueValue}. */
export function decodeSerialized(value: SerializedValue): JsonValue | OpaqueValue {
  const raw = 'text' in value ? undefined : fromBase64(value.data);
  const text = 'text' in value ? value.text : value.type === 'json' && raw ? safeUtf8(raw) : undefined;
  if (value.type === 'json' && text !== undefined) {
    try {
      return JSON.parse(text) as JsonValue;
    } catch {
      // Not JSON after all: shown as opaque below.
    }
  }
  const bytes = 'text' in value ? new TextEncoder().encode(value.text).length : (raw?.length ?? 0);
  return { $serialized: value.type, bytes };
}

function safeUtf8(bytes: Uint8Array): string | undefined {
  try {
    return utf8Decode(bytes, 'serialized value');
  } catch {
    return undefined;
  }
}

type Versions = Readonly<Record<string, number | string>>;

/** Whether channel version `a` is newer than `b` (LangGraph's versions are numbers or zero-padded strings). */
function newer(a: number | string, b: number | string | undefined): boolean {
  if (b === undefined) return true;
  return typeof a === 'number' && typeof b === 'number' ? a > b : String(a) > String(b);
}

/** The node a trigger channel starts (`branch:to:<node>`, `__start__`), or undefined for a state channel. */
function triggeredNode(channel: string): string | undefined {
  if (channel === '__start__') return '__start__';
  const m = /^(?:branch:to:|start:)(.+)$/.exec(channel);
  return m?.[1];
}

/**
 * The nodes a checkpoint schedules, as LangGraph's Pregel loop decides: a node runs when its
 * trigger channel holds a value (it is among the checkpoint's channel values) at a version the
 * node has not seen. None scheduled: the graph has finished at this checkpoint.
 */
export function scheduledNodes(checkpoint: JsonValue | OpaqueValue, channels: Readonly<Record<string, unknown>>): string[] {
  if (typeof checkpoint !== 'object' || checkpoint === null || Array.isArray(checkpoint) || '$serialized' in checkpoint) return [];
  const versions = (checkpoint.channel_versions ?? {}) as Versions;
  const seen = (checkpoint.versions_seen ?? {}) as Readonly<Record<string, Versions>>;
  const next: string[] = [];
  for (const [channel, version] of Object.entries(versions)) {
    const node = triggeredNode(channel);
    if (node === undefined || !Object.hasOwn(channels, channel)) continue;
    if (newer(version, seen[node]?.[channel]) && !next.includes(node)) next.push(node);
  }
  return next.sort();
}

/** The {@link LangGraphCheckpointView} of a snapshot the langgraph profile read. */
export function langGraphView(snapshot: Snapshot<unknown>): LangGraphCheckpointView {
  const payload = snapshot.payload as LangGraphPayload;
  const channels: Record<string, JsonValue | OpaqueValue> = {};
  for (const [name, stored] of Object.entries(payload.channel_values ?? {})) channels[name] = decodeSerialized(stored);
  const checkpoint = decodeSerialized(payload.checkpoint);
  const ts =
    typeof checkpoint === 'object' && checkpoint !== null && !Array.isArray(checkpoint) && !('$serialized' in checkpoint)
      ? checkpoint.ts
      : undefined;
  const metadata = payload.metadata ?? {};
  return {
    threadId: payload.thread_id,
    checkpointNs: payload.checkpoint_ns,
    checkpointId: snapshot.id,
    parentCheckpointId: payload.parent_checkpoint_id ?? null,
    step: typeof metadata.step === 'number' ? metadata.step : null,
    source: typeof metadata.source === 'string' ? metadata.source : snapshot.source,
    ts: typeof ts === 'string' ? ts : snapshot.createdAt,
    next: scheduledNodes(checkpoint, channels),
    channels,
    metadata,
  };
}
