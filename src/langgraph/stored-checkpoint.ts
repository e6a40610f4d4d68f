import type { ChannelVersions, Checkpoint } from '@langchain/langgraph-checkpoint';
import { parseJson } from '../codec/canonical-json.js';
import { type JsonObject } from '../contract/json.js';
import { CheckpointError } from '../contract/errors.js';
import type { SerializedValue, StoredChannel } from './profile.js';
import { channelText, jsonTextOf, storedChannel, storedValue, stringifiedChannelText } from './serialized.js';
import { plainCanonicalJson, type Dumped } from './plain-json.js';

/** A parent checkpoint's stored channels, and their canonical texts when the saver still holds them. */
export interface Parent {
  readonly channels: Readonly<Record<string, StoredChannel>>;
  readonly texts?: Readonly<Record<string, string>>;
}

/** The checkpoint as the serializer is handed it: without `channel_values`, which are stored one by one. */
export function withoutChannelValues(checkpoint: Checkpoint): Omit<Checkpoint, 'channel_values'> {
  const { channel_values: _values, ...bare } = checkpoint;
  return bare;
}

const isRecord = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);

/**
 * A checkpoint's metadata as stored: a JSON object in `metadata`, where filters read it, else
 * the serializer's output in `metadata_blob`. Plain metadata (written without the serializer)
 * is made canonical as it is (`text`); anything else is parsed back from the serializer's JSON.
 */
export function storedMetadata(
  metadata: unknown,
  dumped: Dumped,
  plainText: string | undefined,
): { json?: JsonObject; text?: string; blob?: SerializedValue } {
  const text = plainText ?? (typeof dumped === 'string' && isRecord(metadata) ? plainCanonicalJson(metadata) : undefined);
  if (text !== undefined) return { json: metadata as JsonObject, text };
  const json = jsonTextOf(dumped, 'metadata');
  const parsed = json === undefined ? undefined : parseJson(json, 'metadata');
  return isRecord(parsed) ? { json: parsed as JsonObject } : { blob: storedValue(dumped) };
}

/**
 * The channels a checkpoint stores: those in `newVersions` (`fresh`, serialized as
 * `dumped`), the others copied as stored from the parent when it holds them at the same
 * version (LangGraph's savers store a channel under its version once; the validation
 * suite checks that a channel neither new nor in the parent is not stored).
 */
export function storedChannels(
  checkpoint: Checkpoint,
  values: Record<string, unknown>,
  newVersions: ChannelVersions,
  parent: Parent | undefined,
  fresh: readonly string[],
  dumped: readonly Dumped[],
): { channels: Record<string, StoredChannel>; texts: Record<string, string> } {
  const channels: Record<string, StoredChannel> = {};
  const texts: Record<string, string> = {};
  // `dumped` holds the checkpoint and the metadata first, then the fresh channels in order.
  let next = 0;
  for (const channel of Object.keys(values)) {
    // As a plain object's key it would set the prototype: refused as canonical JSON refuses it.
    if (channel === '__proto__')
      throw new CheckpointError('checkpoint_schema_invalid', 'SavepointSaver: a channel named "__proto__" cannot be stored as JSON', {
        details: { path: '$.channel_values.__proto__' },
      });
    const version = checkpoint.channel_versions?.[channel] ?? newVersions[channel];
    if (fresh[next] === channel) {
      const output = dumped[2 + next++]!;
      const stored = storedChannel(output, version ?? newVersions[channel]!);
      channels[channel] = stored;
      // Plain data's text is JSON.stringify's (see `plainJson`): quoted knowing so.
      texts[channel] = typeof output === 'string' && 'text' in stored ? stringifiedChannelText(stored) : channelText(stored);
      continue;
    }
    const previous = parent?.channels[channel];
    if (!previous || version === undefined || previous.version !== version) continue;
    channels[channel] = previous;
    texts[channel] = parent?.texts?.[channel] ?? channelText(previous);
  }
  return { channels, texts };
}
