import type { RunnableConfig } from '@langchain/core/runnables';
import {
  BaseCheckpointSaver,
  TASKS,
  WRITES_IDX_MAP,
  compareWritesSortKeys,
  getCheckpointId,
  maxChannelVersion,
  writesSortKey,
  type ChannelVersions,
  type Checkpoint,
  type CheckpointListOptions,
  type CheckpointMetadata,
  type CheckpointPendingWrite,
  type CheckpointTuple,
  type PendingWrite,
  type SerializerProtocol,
} from '@langchain/langgraph-checkpoint';
import { canonicalJson, parseJson, type JsonObject } from '../codec/canonical-json.js';
import { systemClock, toRfc3339, type Clock } from '../model/clock.js';
import { CheckpointError, isCheckpointError } from '../model/errors.js';
import type { Snapshot } from '../model/snapshot.js';
import { readSnapshot } from '../profiles/read-snapshot.js';
import { deleteRun } from '../runs/delete-run.js';
import type { BatchOperation, StorageAdapter } from '../storage/adapter.js';
import { copiesOnPut, immediateOf, type ImmediateStore } from '../storage/immediate.js';
import { LANGGRAPH_ROOT, NS_SEPARATOR, assertCheckpointId, checkpointKey, plainSegment, runIdOf, segmentOf, threadSegmentOfRun, writesDir, writesKey } from './keys.js';
import { DEFAULT_KEEP_LAST, LANGGRAPH_SOURCES, langGraphProfile, type LangGraphPayload, type SerializedValue, type StoredChannel } from './profile.js';
import { compareIds, hasId, insertId, loadRunState, reserveSequence, type RunState } from './run-state.js';
import { decodeWrites, encodeWrites, type StoredWrite } from './writes.js';
import { encodeCheckpointDocument } from './document.js';
import { channelText, jsonTextOf, storedChannel, storedValue, storedWrite, valueBytes } from './serialized.js';
import { dumpAll, plainCanonicalJson, plainJsonWithout, plainObjectCanonicalJson, writesPlainAsJson, type Dumped } from './plain-json.js';

/** Options of {@link SavepointSaver}. */
export interface SavepointSaverOptions {
  /** Where checkpoints go: `memoryStorage()`, `fsStorage({ dir })`, `githubStorage(…)`, or your own adapter. */
  readonly storage: StorageAdapter;
  /** LangGraph serializer. @default LangGraph's `JsonPlusSerializer` */
  readonly serde?: SerializerProtocol;
  /**
   * Checkpoints kept per thread namespace: after each put, the oldest beyond this many are
   * deleted with their pending writes (the newest is never deleted). `false` keeps everything.
   * @default 50
   */
  readonly keepLast?: number | false;
  /** Clock for the documents' `created_at`. @default systemClock */
  readonly clock?: Clock;
}

/** The condition of a task's first writes (one object, not one per call). */
const IF_ABSENT = Object.freeze({ ifAbsent: true });

/** Size of a saver's sealing buffer (see `sealBuffer`): larger documents get a buffer of their own. */
const SCRATCH_BYTES = 32 * 1024;

type Configurable = Record<string, unknown>;

/** A parent checkpoint's stored channels, and their canonical texts when the saver still holds them. */
interface Parent {
  readonly channels: Readonly<Record<string, StoredChannel>>;
  readonly texts?: Readonly<Record<string, string>>;
}

function configurableOf(config: RunnableConfig): Configurable | undefined {
  return config.configurable as Configurable | undefined;
}

function requireThreadId(config: RunnableConfig, operation: string): string {
  const threadId = configurableOf(config)?.thread_id;
  if (typeof threadId !== 'string' && typeof threadId !== 'number') {
    throw new CheckpointError('checkpoint_config_invalid', `${operation}: config.configurable.thread_id is required (graph.invoke(input, { configurable: { thread_id } }))`, {
      details: { operation },
    });
  }
  return String(threadId);
}

function namespaceOf(config: RunnableConfig): string {
  const ns = configurableOf(config)?.checkpoint_ns;
  if (ns === undefined || ns === null) return '';
  if (typeof ns !== 'string') throw new CheckpointError('checkpoint_config_invalid', 'config.configurable.checkpoint_ns must be a string');
  return ns;
}

/**
 * The sequence of checkpoint `id` without a promise: known, or reserved now for a checkpoint
 * the run does not hold (every put of a new checkpoint); undefined when its document must be
 * read ({@link SavepointSaver.sequenceOf}). An await is a microtask, and LangGraph's
 * AsyncLocalStorage makes each one cost.
 */
function sequenceNow(state: RunState, id: string): number | undefined {
  return state.sequences.get(id) ?? (hasId(state, id) ? undefined : reserveSequence(state, id));
}

/** The checkpoint as the serializer is handed it: without `channel_values`, which are stored one by one. */
function withoutChannelValues(checkpoint: Checkpoint): Omit<Checkpoint, 'channel_values'> {
  const { channel_values: _values, ...bare } = checkpoint;
  return bare;
}

const isRecord = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);

/**
 * A checkpoint's metadata as stored: a JSON object in `metadata`, where filters read it, else
 * the serializer's output in `metadata_blob`. Plain metadata (written without the serializer)
 * is made canonical as it is (`text`); anything else is parsed back from the serializer's JSON.
 */
function storedMetadata(metadata: unknown, dumped: Dumped, plainText: string | undefined): { json?: JsonObject; text?: string; blob?: SerializedValue } {
  const text = plainText ?? (typeof dumped === 'string' && isRecord(metadata) ? plainCanonicalJson(metadata) : undefined);
  if (text !== undefined) return { json: metadata as JsonObject, text };
  const json = jsonTextOf(dumped, 'metadata');
  const parsed = json === undefined ? undefined : parseJson(json, 'metadata');
  return isRecord(parsed) ? { json: parsed as JsonObject } : { blob: storedValue(dumped) };
}

const sameJson = (a: unknown, b: unknown): boolean => a === b || (typeof a === 'object' && typeof b === 'object' && a !== null && b !== null && canonicalJson(a) === canonicalJson(b));

/**
 * A LangGraph.js checkpointer over any savepoint `StorageAdapter`: `graph.compile({ checkpointer: new SavepointSaver({ storage }) })`.
 *
 * Each (thread, namespace) is a savepoint run under `langgraph/<run_id>/`; each checkpoint
 * one sealed (sha256) document `history/<checkpoint_id>.json` holding the serializer's
 * output as it is; each task's pending writes a sealed part file that retention keeps and
 * deletes with its checkpoint. A put writes one document (plus the changed channels' bytes
 * in it) and never rewrites anything that grows with the thread. `keepLast` (default 50)
 * bounds each thread; `runRetention({ profile: langGraphProfile })` and
 * `savepoint verify|ls|prune --profile langgraph` work on the same store.
 *
 * One saver per thread at a time (as with every LangGraph checkpointer): a saver learns a
 * run's checkpoints by listing it once and then keeps count itself.
 *
 * @example
 * ```ts
 * import { SavepointSaver } from 'savepoint/langgraph';
 * import { fsStorage } from 'savepoint/fs';
 *
 * const checkpointer = new SavepointSaver({ storage: fsStorage({ dir: '.checkpoints' }) });
 * const app = graph.compile({ checkpointer });
 * await app.invoke(input, { configurable: { thread_id: 'order-42' } });
 * ```
 */
export class SavepointSaver extends BaseCheckpointSaver {
  readonly storage: StorageAdapter;
  readonly keepLast: number | false;
  private readonly clock: Clock;
  private readonly runs = new Map<string, Promise<RunState>>();
  /** The run states of `runs` that have loaded, so a put or putWrites of a known run needs no await for it. */
  private readonly loaded = new Map<string, RunState>();
  /** The store's put and batch without a promise (a `SynchronousStorage`, as `memoryStorage`: see storage/immediate.ts): a put then needs no await at all. */
  private readonly immediate: ImmediateStore | undefined;
  /** Whether the store copies a put's bytes before the call returns (`memoryStorage`), so documents may be sealed in {@link sealBuffer}. */
  private readonly storeCopies: boolean;
  /** Made at the first seal (see {@link sealBuffer}): a saver that never puts holds none. */
  private scratch: Uint8Array | undefined;
  /** Whether plain JSON data is written as its JSON text without calling the serializer ({@link writesPlainAsJson}): decided at the first put or putWrites. */
  private plainAsJson: boolean | undefined;
  /** Run ids of recent (thread, namespace) pairs: runIdOf is async (a long id is hashed). Cleared when it grows. */
  private readonly runIds = new Map<string, string>();
  /** The (thread, namespace) pair the last put or putWrites named, and its run id: a graph names the same one call after call (see {@link knownRunId}). */
  private lastRun: { readonly threadId: string; readonly ns: string; readonly runId: string } | undefined;
  /** The last two checkpoint ids that passed `assertCheckpointId` (see {@link assertId}). */
  private checkedId: string | undefined;
  private checkedIdBefore: string | undefined;

  constructor(options: SavepointSaverOptions) {
    super(options?.serde);
    if (!options || typeof options.storage?.get !== 'function') {
      throw new CheckpointError('checkpoint_config_invalid', 'SavepointSaver: options.storage must be a StorageAdapter');
    }
    const keepLast = options.keepLast ?? DEFAULT_KEEP_LAST;
    if (keepLast !== false && !(Number.isInteger(keepLast) && keepLast >= 1)) {
      throw new CheckpointError('checkpoint_config_invalid', 'SavepointSaver: keepLast must be a positive integer or false', { details: { keepLast: String(keepLast) } });
    }
    this.storage = options.storage;
    this.keepLast = keepLast;
    this.clock = options.clock ?? systemClock;
    this.storeCopies = copiesOnPut(this.storage);
    this.immediate = immediateOf(this.storage);
  }

  /**
   * Where documents are sealed when the store copies a put's bytes before the call returns:
   * one buffer per saver, made at its first put, instead of a new one per document, whose
   * allocation and collection cost more than sealing a small document. Each sealed view goes
   * straight into one store call, in the same synchronous run, and is never kept.
   */
  private sealBuffer(): Uint8Array | undefined {
    return this.storeCopies ? (this.scratch ??= new Uint8Array(SCRATCH_BYTES)) : undefined;
  }

  private run(runId: string): Promise<RunState> {
    let state = this.runs.get(runId);
    if (!state) {
      const loading = loadRunState(this.storage, runId, (key) => this.read(key));
      state = loading;
      this.runs.set(runId, loading);
      loading.then(
        (loaded) => {
          if (this.runs.get(runId) === loading) this.loaded.set(runId, loaded);
        },
        () => this.runs.delete(runId),
      );
    }
    return state;
  }

  /** Forgets what this saver knew of a run (its files were deleted). */
  private forgetRun(runId: string): void {
    this.runs.delete(runId);
    this.loaded.delete(runId);
  }

  /** The run id of a (thread, namespace) pair, remembered for the next put (runIdOf is async). */
  private async runIdFor(threadId: string, ns: string): Promise<string> {
    const key = `${threadId.length}:${threadId}${ns}`;
    const known = this.runIds.get(key);
    if (known !== undefined) return known;
    const runId = await runIdOf(threadId, ns);
    if (this.runIds.size >= 1024) this.runIds.clear();
    this.runIds.set(key, runId);
    return runId;
  }

  /**
   * The run id of a (thread, namespace) pair this saver has met, without building its map key
   * (a new string to hash on every call) when it is the pair of the last call. Inside a graph
   * the saver's calls run between LangGraph's, cache-cold (issue 17): each step it skips counts.
   */
  private knownRunId(threadId: string, ns: string): string | undefined {
    const last = this.lastRun;
    if (last !== undefined && last.threadId === threadId && last.ns === ns) return last.runId;
    const runId = this.runIds.get(`${threadId.length}:${threadId}${ns}`);
    if (runId !== undefined) this.lastRun = { threadId, ns, runId };
    return runId;
  }

  /**
   * `assertCheckpointId`, skipped for the last two ids that passed it (a pure check): LangGraph
   * names each checkpoint id three times — put's id, the next put's parent, putWrites' checkpoint.
   */
  private assertId(id: unknown, field?: string): asserts id is string {
    if (typeof id === 'string' && (id === this.checkedId || id === this.checkedIdBefore)) return;
    assertCheckpointId(id, field);
    this.checkedIdBefore = this.checkedId;
    this.checkedId = id;
  }

  private async decidePlain(): Promise<boolean> {
    return (this.plainAsJson ??= await writesPlainAsJson(this.serde));
  }

  private read(key: string): Promise<Snapshot<LangGraphPayload> | undefined> {
    return readSnapshot(this.storage, langGraphProfile, key);
  }

  /** The sequence of a stored checkpoint (read from its document when not known yet), else a new one. */
  private async sequenceOf(state: RunState, id: string): Promise<number> {
    const known = state.sequences.get(id);
    if (known !== undefined) return known;
    if (hasId(state, id)) {
      const stored = await this.read(checkpointKey(state.runId, id));
      if (stored && !state.sequences.has(id)) state.sequences.set(id, stored.sequence);
    }
    return reserveSequence(state, id);
  }

  /** True for a sequence this saver reserved itself and found no writes under (no other saver can have written its writes). */
  private ownsSequence(state: RunState, sequence: number): boolean {
    return sequence > state.loadedMaxSequence && !state.leftoverWrites.has(sequence);
  }

  /** Serialized channels of the parent checkpoint (with their texts when this saver wrote it last and still holds it). */
  private async parentChannels(state: RunState, parentId: string): Promise<Parent | undefined> {
    if (state.last?.id === parentId) return state.last;
    const channels = (await this.read(checkpointKey(state.runId, parentId)))?.payload.channel_values;
    return channels && { channels };
  }

  async put(config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata, newVersions: ChannelVersions): Promise<RunnableConfig> {
    const threadId = requireThreadId(config, 'put');
    const ns = namespaceOf(config);
    const parentValue = configurableOf(config)?.checkpoint_id;
    const parentId = typeof parentValue === 'string' && parentValue !== '' ? parentValue : undefined;
    if (parentId !== undefined) this.assertId(parentId, 'parent checkpoint_id');
    this.assertId(checkpoint?.id);
    // Known runs, sequences and parents are answered without an await (each is a microtask per put).
    const runId = this.knownRunId(threadId, ns) ?? (await this.runIdFor(threadId, ns));
    const state = this.loaded.get(runId) ?? (await this.run(runId));
    const sequence = sequenceNow(state, checkpoint.id) ?? (await this.sequenceOf(state, checkpoint.id));
    const parent = parentId === undefined ? undefined : state.last?.id === parentId ? state.last : await this.parentChannels(state, parentId);
    const values = checkpoint.channel_values;
    const plain = this.plainAsJson ?? (await this.decidePlain());
    // Every serialization at once, one await (none when all is plain data): each await is a microtask, and LangGraph's AsyncLocalStorage makes those cost.
    const fresh = Object.keys(values ?? {}).filter((channel) => Object.hasOwn(newVersions, channel));
    // Plain metadata is stored as canonical JSON only: its JSON.stringify text would go unused.
    const metadataText = plain ? plainObjectCanonicalJson(metadata) : undefined;
    // The checkpoint without its channel values, as the serializer's text when plain (no copy of it made).
    const bareText = plain ? plainJsonWithout(checkpoint, 'channel_values') : undefined;
    const pending: unknown[] = [bareText === undefined ? withoutChannelValues(checkpoint) : null, metadataText === undefined ? metadata : null];
    for (const channel of fresh) pending.push(values[channel]);
    const all = dumpAll(this.serde, pending, plain);
    const dumped = Array.isArray(all) ? all : await all;
    if (bareText !== undefined) dumped[0] = bareText;
    const { channels, texts } = this.storedChannels(checkpoint, values ?? {}, newVersions, parent, fresh, dumped);
    const stored = storedMetadata(metadata, dumped[1]!, metadataText);
    const payload: LangGraphPayload = { thread_id: threadId, checkpoint_ns: ns, checkpoint: storedValue(dumped[0]!), channel_values: channels, metadata: stored.json ?? {} };
    if (parentId !== undefined) payload.parent_checkpoint_id = parentId;
    if (stored.blob) payload.metadata_blob = stored.blob;
    const source = (LANGGRAPH_SOURCES as readonly string[]).includes(metadata?.source) ? metadata.source : 'update';
    const header = { id: checkpoint.id, runId, sequence, createdAt: toRfc3339(this.clock.now()), source };
    const encoded = encodeCheckpointDocument(header, payload, { texts, scratch: this.sealBuffer(), metadata: stored.text });
    const bytes = encoded instanceof Uint8Array ? encoded : await encoded;
    const key = checkpointKey(runId, checkpoint.id);
    // With an atomic batch, the checkpoints retention lets go leave in the same commit.
    const leaving = this.leavingWith(state, checkpoint.id);
    if (leaving) {
      const operations: BatchOperation[] = [{ type: 'put', key, bytes }, ...leaving.keys.map((k): BatchOperation => ({ type: 'delete', key: k }))];
      if (this.immediate) this.immediate.batch(operations);
      else await this.storage.batch!(operations);
      insertId(state, checkpoint.id);
      for (const id of leaving.ids) this.forget(state, id);
    } else {
      if (this.immediate) this.immediate.put(key, bytes);
      else await this.storage.put(key, bytes);
      insertId(state, checkpoint.id);
    }
    if (state.ids.at(-1) === checkpoint.id) state.last = { id: checkpoint.id, channels, texts };
    if (this.keepLast !== false && state.ids.length > this.keepLast) await this.prune(state);
    return { configurable: { thread_id: threadId, checkpoint_ns: ns, checkpoint_id: checkpoint.id } };
  }

  /**
   * The channels a checkpoint stores: those in `newVersions` (`fresh`, serialized as
   * `dumped`), the others copied as stored from the parent when it holds them at the same
   * version (LangGraph's savers store a channel under its version once; the validation
   * suite checks that a channel neither new nor in the parent is not stored).
   */
  private storedChannels(
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
      if (channel === '__proto__') throw new CheckpointError('checkpoint_schema_invalid', 'SavepointSaver: a channel named "__proto__" cannot be stored as JSON', { details: { path: '$.channel_values.__proto__' } });
      const version = checkpoint.channel_versions?.[channel] ?? newVersions[channel];
      let stored: StoredChannel | undefined;
      if (fresh[next] === channel) {
        stored = storedChannel(dumped[2 + next++]!, version ?? newVersions[channel]!);
      } else {
        const previous = parent?.channels[channel];
        if (!previous || version === undefined || previous.version !== version) continue;
        stored = previous;
      }
      channels[channel] = stored;
      texts[channel] = (stored === parent?.channels[channel] ? parent.texts?.[channel] : undefined) ?? channelText(stored);
    }
    return { channels, texts };
  }

  async putWrites(config: RunnableConfig, writes: PendingWrite[], taskId: string, taskPath?: string): Promise<void> {
    const threadId = requireThreadId(config, 'putWrites');
    const ns = namespaceOf(config);
    const checkpointId = configurableOf(config)?.checkpoint_id;
    if (checkpointId === undefined || checkpointId === '') {
      throw new CheckpointError('checkpoint_config_invalid', 'putWrites: config.configurable.checkpoint_id is required', { details: { operation: 'putWrites' } });
    }
    this.assertId(checkpointId);
    if (typeof taskId !== 'string') throw new CheckpointError('checkpoint_config_invalid', 'putWrites: taskId must be a string');
    const runId = this.knownRunId(threadId, ns) ?? (await this.runIdFor(threadId, ns));
    const state = this.loaded.get(runId) ?? (await this.run(runId));
    const sequence = sequenceNow(state, checkpointId) ?? (await this.sequenceOf(state, checkpointId));
    const key = writesKey(runId, sequence, plainSegment(taskId) ?? (await segmentOf(taskId)));
    const plain = this.plainAsJson ?? (await this.decidePlain());
    // Index access, not `([channel, value]) =>`: destructuring runs the iterator protocol where the code is not optimized yet (cache-cold, issue 17).
    const all = dumpAll(this.serde, writes.map((write) => write[1]), plain);
    const dumped = Array.isArray(all) ? all : await all;
    const fresh = writes.map((write, index): StoredWrite => storedWrite(WRITES_IDX_MAP[write[0]] ?? index, write[0], dumped[index]!));
    const document = { thread_id: threadId, checkpoint_ns: ns, checkpoint_id: checkpointId, task_id: taskId, task_path: taskPath ?? '' };
    // Usually the task's first writes: create-only, one storage call. Otherwise merge as
    // MemorySaver does: a regular write (idx >= 0) already stored is kept, special ones replace.
    for (let attempt = 0; ; attempt++) {
      const existing = attempt === 0 ? undefined : await this.storage.get(key);
      let merged = fresh;
      if (existing) {
        const stored = await decodeWrites(existing.bytes, key);
        const byIdx = new Map(stored.writes.map((w) => [w.idx, w]));
        for (const w of fresh) if (w.idx < 0 || !byIdx.has(w.idx)) byIdx.set(w.idx, w);
        merged = [...byIdx.values()];
      }
      const encoded = encodeWrites(document, merged, this.sealBuffer());
      const bytes = encoded instanceof Uint8Array ? encoded : await encoded;
      try {
        const condition = existing ? { ifVersion: existing.version } : IF_ABSENT;
        if (this.immediate) this.immediate.put(key, bytes, condition);
        else await this.storage.put(key, bytes, condition);
        // Only for sequences whose writes this saver has seen from the start; others are listed when pruned.
        const known = state.writeKeys.get(sequence);
        if (known) known.add(key);
        else if (!existing && this.ownsSequence(state, sequence)) state.writeKeys.set(sequence, new Set<string>().add(key));
        return;
      } catch (err) {
        if (!isCheckpointError(err, 'checkpoint_conflict') || attempt >= 3) throw err;
      }
    }
  }

  async getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    const threadValue = configurableOf(config)?.thread_id;
    if (threadValue === undefined || threadValue === null) return undefined;
    const threadId = requireThreadId(config, 'getTuple');
    const ns = namespaceOf(config);
    const runId = await runIdOf(threadId, ns);
    let id: string | undefined = getCheckpointId(config) || undefined;
    // A run this saver has not listed yet: its listing (one, shared with the puts that follow) gives the newest id.
    if (id === undefined && !this.runs.has(runId)) {
      id = (await this.run(runId)).ids.at(-1);
      if (id === undefined) return undefined;
    }
    if (id === undefined) {
      for await (const entry of this.storage.list(`${LANGGRAPH_ROOT}/${runId}/history/`)) {
        const name = entry.key.slice(entry.key.lastIndexOf('/') + 1);
        if (name.endsWith('.json')) {
          const candidate = name.slice(0, -'.json'.length);
          if (id === undefined || compareIds(candidate, id) > 0) id = candidate;
        }
      }
      if (id === undefined) return undefined;
    }
    assertCheckpointId(id);
    const snapshot = await this.read(checkpointKey(runId, id));
    if (!snapshot || snapshot.payload.thread_id !== threadId || snapshot.payload.checkpoint_ns !== ns) return undefined;
    return this.toTuple(snapshot);
  }

  async *list(config: RunnableConfig, options?: CheckpointListOptions): AsyncGenerator<CheckpointTuple> {
    const { before, filter } = options ?? {};
    let remaining = options?.limit;
    const c = configurableOf(config) ?? {};
    const threadId = c.thread_id === undefined || c.thread_id === null ? undefined : requireThreadId(config, 'list');
    const ns = c.checkpoint_ns === undefined || c.checkpoint_ns === null ? undefined : namespaceOf(config);
    const onlyId = typeof c.checkpoint_id === 'string' && c.checkpoint_id !== '' ? c.checkpoint_id : undefined;
    const beforeValue = (before?.configurable as Configurable | undefined)?.checkpoint_id;
    const beforeId = typeof beforeValue === 'string' && beforeValue !== '' ? beforeValue : undefined;
    const threadSegment = threadId === undefined ? undefined : await segmentOf(threadId);
    const nsSegment = ns === undefined || ns === '' ? ns : await segmentOf(ns);

    const runs = new Map<string, string[]>();
    for await (const entry of this.storage.list(threadSegment === undefined ? `${LANGGRAPH_ROOT}/` : `${LANGGRAPH_ROOT}/${threadSegment}`)) {
      const m = /^langgraph\/([^/]+)\/history\/([^/]+)\.json$/.exec(entry.key);
      if (!m) continue;
      const [, runId, id] = m as unknown as [string, string, string];
      if (threadSegment !== undefined && threadSegmentOfRun(runId) !== threadSegment) continue;
      if (nsSegment !== undefined) {
        const dot = runId.indexOf(NS_SEPARATOR);
        if ((dot < 0 ? '' : runId.slice(dot + 1)) !== nsSegment) continue;
      }
      if (onlyId !== undefined && id !== onlyId) continue;
      if (beforeId !== undefined && id >= beforeId) continue;
      let ids = runs.get(runId);
      if (!ids) runs.set(runId, (ids = []));
      ids.push(id);
    }
    for (const runId of [...runs.keys()].sort(compareIds)) {
      for (const id of runs.get(runId)!.sort(compareIds).reverse()) {
        if (remaining !== undefined && remaining <= 0) return;
        const snapshot = await this.read(checkpointKey(runId, id));
        if (!snapshot) continue; // deleted while listing
        const p = snapshot.payload;
        if ((threadId !== undefined && p.thread_id !== threadId) || (ns !== undefined && p.checkpoint_ns !== ns)) continue;
        if (filter && Object.keys(filter).length > 0) {
          const metadata = (await this.metadataOf(p)) as Record<string, unknown>;
          if (!Object.entries(filter).every(([k, v]) => sameJson(metadata?.[k], v))) continue;
        }
        if (remaining !== undefined) remaining--;
        yield await this.toTuple(snapshot);
      }
    }
  }

  async deleteThread(threadId: string): Promise<void> {
    if (typeof threadId !== 'string' && typeof threadId !== 'number') throw new CheckpointError('checkpoint_config_invalid', 'deleteThread: threadId must be a string');
    const segment = await segmentOf(String(threadId));
    const runIds = new Set<string>();
    for await (const entry of this.storage.list(`${LANGGRAPH_ROOT}/${segment}`)) {
      const runId = entry.key.split('/')[1]!;
      if (threadSegmentOfRun(runId) === segment) runIds.add(runId);
    }
    for (const runId of runIds) {
      this.forgetRun(runId);
      await deleteRun({ storage: this.storage, profile: langGraphProfile, runId });
      this.forgetRun(runId);
    }
  }

  private async metadataOf(p: LangGraphPayload): Promise<CheckpointMetadata> {
    if (p.metadata_blob) return (await this.serde.loadsTyped(p.metadata_blob.type, valueBytes(p.metadata_blob, 'metadata'))) as CheckpointMetadata;
    return (await this.serde.loadsTyped('json', canonicalJson(p.metadata))) as CheckpointMetadata;
  }

  private async toTuple(snapshot: Snapshot<LangGraphPayload>): Promise<CheckpointTuple> {
    const p = snapshot.payload;
    const where = checkpointKey(snapshot.runId, snapshot.id);
    const checkpoint = (await this.serde.loadsTyped(p.checkpoint.type, valueBytes(p.checkpoint, where))) as Checkpoint;
    checkpoint.channel_values = {};
    for (const [channel, value] of Object.entries(p.channel_values)) {
      checkpoint.channel_values[channel] = await this.serde.loadsTyped(value.type, valueBytes(value, where));
    }
    const parentId = p.parent_checkpoint_id;
    if (checkpoint.v < 4 && parentId !== undefined) await this.migratePendingSends(checkpoint, snapshot.runId, parentId);
    const tuple: CheckpointTuple = {
      config: { configurable: { thread_id: p.thread_id, checkpoint_ns: p.checkpoint_ns, checkpoint_id: snapshot.id } },
      checkpoint,
      metadata: await this.metadataOf(p),
      pendingWrites: await this.pendingWrites(snapshot.runId, snapshot.sequence, snapshot.id),
    };
    if (parentId !== undefined) tuple.parentConfig = { configurable: { thread_id: p.thread_id, checkpoint_ns: p.checkpoint_ns, checkpoint_id: parentId } };
    return tuple;
  }

  /** A checkpoint's pending writes, in LangGraph's `writesSortKey` order (the order live execution applies them). */
  private async pendingWrites(runId: string, sequence: number, checkpointId: string): Promise<CheckpointPendingWrite[]> {
    const keys: string[] = [];
    for await (const entry of this.storage.list(writesDir(runId, sequence))) keys.push(entry.key);
    const docs = await Promise.all(
      keys.map(async (key) => {
        const stored = await this.storage.get(key);
        return stored ? decodeWrites(stored.bytes, key) : undefined;
      }),
    );
    const sorted: { sortKey: ReturnType<typeof writesSortKey>; taskId: string; write: StoredWrite; key: string }[] = [];
    for (const [i, doc] of docs.entries()) {
      if (!doc || doc.checkpoint_id !== checkpointId) continue;
      for (const write of doc.writes) sorted.push({ sortKey: writesSortKey(doc.task_path, doc.task_id, write.idx), taskId: doc.task_id, write, key: keys[i]! });
    }
    sorted.sort((a, b) => compareWritesSortKeys(a.sortKey, b.sortKey));
    return Promise.all(sorted.map(async ({ taskId, write, key }) => [taskId, write.channel, await this.serde.loadsTyped(write.type, valueBytes(write, key))] as CheckpointPendingWrite));
  }

  /** Checkpoints older than format v4 kept pending sends in their parent's writes (as MemorySaver migrates them). */
  private async migratePendingSends(checkpoint: Checkpoint, runId: string, parentId: string): Promise<void> {
    const parent = await this.read(checkpointKey(runId, parentId));
    const writes = parent ? await this.pendingWrites(runId, parent.sequence, parentId) : [];
    const values = checkpoint.channel_values as Record<string, unknown>;
    values[TASKS] = writes.filter(([, channel]) => channel === TASKS).map(([, , value]) => value);
    const versions = checkpoint.channel_versions as Record<string, number | string>;
    versions[TASKS] = Object.keys(versions).length > 0 ? maxChannelVersion(...Object.values(versions)) : this.getNextVersion(undefined);
  }

  /** Deletes the oldest checkpoints of the run beyond `keepLast`, each with its pending writes (document first, so none is left without its writes). */
  /**
   * The checkpoints (and their pending writes) that retention lets go once `id` is stored,
   * when all their keys are known and the adapter has an atomic batch — so they can be
   * deleted in the put's own commit. Undefined otherwise ({@link prune} deletes them after).
   */
  private leavingWith(state: RunState, id: string): { ids: string[]; keys: string[] } | undefined {
    if (this.keepLast === false || !this.storage.capabilities.atomicBatch || typeof this.storage.batch !== 'function') return undefined;
    const known = hasId(state, id);
    const excess = state.ids.length + (known ? 0 : 1) - this.keepLast;
    if (excess <= 0) return undefined;
    const ids = state.ids.slice(0, excess);
    // The new id among the oldest (an old checkpoint put again): the plain path decides.
    if (ids.includes(id) || ids.length !== excess || (!known && state.ids.length > 0 && id < state.ids[excess - 1]!)) return undefined;
    const keys: string[] = [];
    for (const old of ids) {
      const sequence = state.sequences.get(old);
      const writes = sequence === undefined ? undefined : state.writeKeys.get(sequence);
      if (!writes) return undefined;
      keys.push(checkpointKey(state.runId, old), ...writes);
    }
    return { ids, keys };
  }

  /** Drops a deleted checkpoint from the run's state. */
  private forget(state: RunState, id: string): void {
    const at = state.ids.indexOf(id);
    if (at >= 0) state.ids.splice(at, 1);
    const sequence = state.sequences.get(id);
    if (sequence !== undefined) state.writeKeys.delete(sequence);
    state.sequences.delete(id);
  }

  private async prune(state: RunState): Promise<void> {
    if (this.keepLast === false) return;
    while (state.ids.length > this.keepLast) {
      const id = state.ids[0]!;
      const key = checkpointKey(state.runId, id);
      try {
        const sequence = state.sequences.get(id) ?? (await this.read(key).catch(() => undefined))?.sequence;
        await this.storage.delete(key);
        if (sequence !== undefined) {
          const known = state.writeKeys.get(sequence);
          if (known) for (const k of known) await this.storage.delete(k);
          else for await (const entry of this.storage.list(writesDir(state.runId, sequence))) await this.storage.delete(entry.key);
          state.writeKeys.delete(sequence);
        }
      } catch (err) {
        throw new CheckpointError('checkpoint_retention_prune_failed', `SavepointSaver: could not delete an old checkpoint of run ${state.runId} (the new one is stored)`, {
          cause: err,
          details: { runId: state.runId },
        });
      }
      state.ids.shift();
      state.sequences.delete(id);
    }
  }
}
