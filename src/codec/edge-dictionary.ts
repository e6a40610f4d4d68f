import { utf8Encode } from './utf8.js';

/**
 * The preset deflate dictionary of a chunked document's edges (codec/chunk-edges.ts): the member
 * names and fixed text that the first and last bytes of savepoint's documents hold, a LangGraph
 * checkpoint's and a task's writes first. An envelope's edges are a few hundred bytes deflated
 * on their own, where deflate finds few repeats; with this text before them, most of their
 * structure is a reference into it, and what is left is ids, times and checksums.
 *
 * Never change it: edges stored with it inflate only with these very bytes. A new dictionary
 * needs a new envelope member naming it.
 */
const TEXT =
  // The writer's documents (defaultProfile, jsonProfile).
  '{"created_at":"2026-01-01T00:00:00.000Z","integrity":{"algorithm":"sha256","checksum":"","format_version":"1.0"},' +
  '"run_id":"","sequence":1,"snapshot_id":"cp_20260101T000000000Z_","source":"step_boundary","source_details":[],"state":{' +
  '],"status":"in_progress"}' +
  // A task's pending writes (LangGraph).
  '{"checkpoint_id":"","checkpoint_ns":"","integrity":{"algorithm":"sha256","checksum":"","format_version":"1.0"},"task_id":"",' +
  '"task_path":"~__pregel_pull, __start__","thread_id":"","writes":[{"channel":"messages","idx":0,"text":"[\\"' +
  '\\"]","type":"json"}]}' +
  // A LangGraph checkpoint: its head, then its tail (the most alike from one document to the next: nearest the end).
  '{"channel_values":{"__start__":{"text":"{\\"messages\\":[\\"","type":"json","version":1},"branch:to:agent":{"text":"null","type":"json","version":1},' +
  '"messages":{"text":"[\\"' +
  '\\"]","type":"json","version":1}},' +
  '"checkpoint":{"text":"{\\"v\\":4,\\"id\\":\\"1f000000-0000-6000-8000-000000000000\\",\\"ts\\":\\"2026-01-01T00:00:00.000Z\\",' +
  '\\"channel_versions\\":{\\"__start__\\":1,\\"messages\\":1,\\"branch:to:agent\\":1},' +
  '\\"versions_seen\\":{\\"__input__\\":{},\\"__start__\\":{\\"__start__\\":1},\\"agent\\":{\\"branch:to:agent\\":1}}}","type":"json"},' +
  '"checkpoint_ns":"","created_at":"2026-01-01T00:00:00.000Z","integrity":{"algorithm":"sha256","checksum":"","format_version":"1.0"},' +
  '"metadata":{"parents":{},"source":"loop","step":1},"parent_checkpoint_id":"1f000000-0000-6000-8000-000000000000",' +
  '"run_id":"","sequence":1,"snapshot_id":"1f000000-0000-6000-8000-000000000000","source":"loop","source_details":[],"status":"in_progress","thread_id":""}';

/** The dictionary's bytes. */
export const EDGE_DICTIONARY: Uint8Array = utf8Encode(TEXT);
