import { utf8Decode, utf8Encode } from '../codec/utf8.js';
import { CheckpointError } from '../contract/errors.js';
import { fromBase64, toBase64 } from '../codec/base64.js';
import type { SerializedValue, StoredChannel } from './profile.js';
import type { StoredWrite } from './writes.js';
import type { Dumped } from './plain-json.js';
import { quoteJsonText } from '../codec/quote-json-text.js';
import { quoteRecent, REMEMBERED_MAX_LENGTH } from './recent-texts.js';

/**
 * Exact UTF-8: refuses malformed bytes (and surrogates encoded as bytes), keeps a leading
 * byte order mark. Bytes it decodes encode back to themselves, so the text form is lossless.
 */
const exactUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** The serializer's text when its bytes are exact UTF-8, else undefined (they stay base64). */
function exactText(bytes: Uint8Array): string | undefined {
  try {
    return exactUtf8.decode(bytes);
  } catch {
    return undefined;
  }
}

/**
 * How LangGraph's serializer output is stored: JSON output (`type: 'json'`, nearly every
 * value of JsonPlusSerializer) as its own UTF-8 `text`, readable in the file and cheaper to
 * write and read than base64; anything else, or JSON bytes that are not exact UTF-8 (a
 * custom serializer's), as base64 `data`. Both give back the serializer's bytes unchanged.
 */
export function storedValue(dumped: Dumped): SerializedValue {
  if (typeof dumped === 'string') return { type: 'json', text: dumped };
  const [type, bytes] = dumped;
  const text = textOf(type, bytes);
  return text !== undefined ? { type, text } : { type, data: toBase64(bytes) };
}

/** The JSON text of the serializer's output when it is type `json` (refused with `checkpoint_schema_invalid` when not UTF-8), else undefined. */
export function jsonTextOf(dumped: Dumped, where: string): string | undefined {
  if (typeof dumped === 'string') return dumped;
  return dumped[0] === 'json' ? utf8Decode(dumped[1], where) : undefined;
}

/** The text form of the serializer's output when it has one (see {@link storedValue}); throws on an empty type tag. */
function textOf(type: string, bytes: Uint8Array): string | undefined {
  if (typeof type !== 'string' || type === '') {
    throw new CheckpointError('checkpoint_schema_invalid', 'SavepointSaver: the serializer returned an empty type tag', {
      details: { type: String(type) },
    });
  }
  return type === 'json' ? exactText(bytes) : undefined;
}

/** A channel's serializer output as stored (see {@link storedValue}; a primitive's JSON text as type `json`), with its version. */
export function storedChannel(dumped: Dumped, version: number | string): StoredChannel {
  const v = storedValue(dumped);
  return 'text' in v ? { type: v.type, text: v.text, version } : { type: v.type, data: v.data, version };
}

/** One pending write's serializer output as stored (as {@link storedChannel}). */
export function storedWrite(idx: number, channel: string, dumped: Dumped): StoredWrite {
  const v = storedValue(dumped);
  return 'text' in v ? { idx, channel, type: v.type, text: v.text } : { idx, channel, type: v.type, data: v.data };
}

/** The serializer's bytes of a stored value, in either form (documents written before the text form hold base64 only). */
export function valueBytes(value: SerializedValue, where: string): Uint8Array {
  if ('text' in value) return utf8Encode(value.text);
  const bytes = fromBase64(value.data);
  if (!bytes) throw new CheckpointError('checkpoint_schema_invalid', `${where}: stored value is not base64`, { details: { where } });
  return bytes;
}

/**
 * What `serde.loadsTyped` is given for a stored value: a `json` value's stored text as it is
 * (`SerializerProtocol.loadsTyped` takes a string, as the saver already passes metadata),
 * which spares encoding it to UTF-8 here only for the serializer to decode it back (for a
 * long conversation's channel, most of a read's time); bytes otherwise. A text with a
 * leading byte order mark goes as bytes: a decoder drops the mark, `JSON.parse` would not.
 */
export function serializedInput(value: SerializedValue, where: string): Uint8Array | string {
  if ('text' in value && value.type === 'json' && value.text.charCodeAt(0) !== 0xfeff) return value.text;
  return valueBytes(value, where);
}

const quote = JSON.stringify;

/** Canonical JSON text of a stored value's own members (`"data":…` or `"text":…`; both sort before `"type"`). */
const bodyText = (value: SerializedValue): string =>
  'text' in value ? `"text":${quoteRecent(value.text)}` : `"data":${quote(value.data)}`;

/** Canonical JSON of a stored value: `{"data"|"text":…,"type":…}` (keys in code-unit order). */
export function valueText(value: SerializedValue): string {
  return `{${bodyText(value)},"type":${quote(value.type)}}`;
}

function versionText(version: number | string): string {
  if (typeof version === 'string' || (typeof version === 'number' && Number.isFinite(version))) return quote(version);
  throw new CheckpointError('checkpoint_schema_invalid', 'SavepointSaver: a channel version must be a finite number or a string', {
    details: { version: String(version) },
  });
}

/** Canonical JSON of a stored channel: `{"data"|"text":…,"type":…,"version":…}`. */
export function channelText(channel: StoredChannel): string {
  return `{${bodyText(channel)},"type":${quote(channel.type)},"version":${versionText(channel.version)}}`;
}

/**
 * {@link channelText} of a channel whose `text` is `JSON.stringify`'s (plain data the saver wrote
 * itself, see `plainJson`). A long one is quoted by `quoteJsonText`, into one flat string: not
 * looked at character by character again, nor copied once more when it is encoded. A shorter one
 * may be one a task just wrote, quoted already (see `quoteRecent`).
 */
export function stringifiedChannelText(channel: StoredChannel & { readonly text: string }): string {
  if (channel.text.length <= REMEMBERED_MAX_LENGTH) return channelText(channel);
  return quoteJsonText(channel.text, '{"text":', `,"type":${quote(channel.type)},"version":${versionText(channel.version)}}`);
}

/** Canonical JSON of one pending write: `{"channel":…,"data":…,"idx":…,"type":…}` or `{"channel":…,"idx":…,"text":…,"type":…}`. */
export function writeText(write: StoredWrite): string {
  const head = `{"channel":${quote(write.channel)},`;
  const idx = `"idx":${quote(write.idx)}`;
  return 'text' in write
    ? `${head}${idx},"text":${quoteRecent(write.text)},"type":${quote(write.type)}}`
    : `${head}"data":${quote(write.data)},${idx},"type":${quote(write.type)}}`;
}
