export { SavepointSaver, type SavepointSaverOptions } from './saver.js';
export {
  langGraphProfile,
  LangGraphDocumentSchema,
  SerializedValueSchema,
  StoredChannelSchema,
  LANGGRAPH_SOURCES,
  DEFAULT_KEEP_LAST,
  type LangGraphDocument,
  type LangGraphPayload,
  type SerializedValue,
  type StoredChannel,
} from './profile.js';
export { WritesDocumentSchema, StoredWriteSchema, type WritesDocument, type StoredWrite } from './writes.js';
export { runIdOf, LANGGRAPH_ROOT } from './keys.js';
export type { AutoSweepOptions, AutoSweepOutcome } from '../writer/auto-sweep.js';
