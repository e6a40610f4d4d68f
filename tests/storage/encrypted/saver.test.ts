import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Annotation, END, START, StateGraph } from '@langchain/langgraph';
import { describe, expect, it } from 'vitest';
import { encryptedStorage, EncryptionKey, isCheckpointError, listAll, memoryStorage, type StorageAdapter } from 'savepoint';
import { fsStorage } from 'savepoint/fs';
import { runIdOf, SavepointSaver } from 'savepoint/langgraph';
import { scratchFolder } from '../../support/scratch.js';

// SavepointSaver on an encrypted store: a graph's checkpoints and pending writes round-trip
// with the key (also through a new process's saver, here a new store instance), the directory
// holds no plaintext fragment (also with content chunks, whose ids are keyed), and without the
// key a read fails with the key id it needs, never the key or a plaintext.
const base = scratchFolder('encrypted-saver');

const SECRET = 'tool-returned-api-token-9c4e';
// Over the 16 KiB chunking threshold, so the saver's content chunks are written (keyed ids).
const LARGE = Array.from({ length: 400 }, (_, i) => `line ${i}: ${SECRET}`).join('\n');

const State = Annotation.Root({
  notes: Annotation<string[]>({ reducer: (a, b) => [...a, ...b], default: () => [] }),
  document: Annotation<string>({ reducer: (_, b) => b, default: () => '' }),
});

function graph(checkpointer: SavepointSaver) {
  return new StateGraph(State)
    .addNode('fetch', () => ({ notes: [`fetched ${SECRET}`], document: LARGE }))
    .addNode('summarise', (s) => ({ notes: [`summary of ${s.notes.length} notes`] }))
    .addEdge(START, 'fetch')
    .addEdge('fetch', 'summarise')
    .addEdge('summarise', END)
    .compile({ checkpointer, interruptBefore: ['summarise'] });
}

function allFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name));
}

const opened = (dir: string, keys: EncryptionKey | EncryptionKey[]): StorageAdapter =>
  encryptedStorage(fsStorage({ layout: 'files', dir }), { keys });

describe('SavepointSaver on encryptedStorage', () => {
  it('a graph interrupted mid-run resumes from a new saver with the key; the store holds no plaintext; no key, no read', async () => {
    const dir = mkdtempSync(join(base, 'store-'));
    const key = EncryptionKey.generate();
    const config = { configurable: { thread_id: 'thread-1' } };

    const firstStore = opened(dir, key);
    const first = new SavepointSaver({ storage: firstStore });
    await graph(first).invoke({ notes: ['start'] }, config);
    const paused = await graph(first).getState(config);
    expect(paused.next).toEqual(['summarise']);
    expect(paused.values.notes).toEqual(['start', `fetched ${SECRET}`]);
    await firstStore.close();

    // Another process: a new store instance over the same directory, the same key.
    const secondStore = opened(dir, key);
    const second = new SavepointSaver({ storage: secondStore });
    const resumed = await graph(second).invoke(null, config);
    expect(resumed).toEqual({ notes: ['start', `fetched ${SECRET}`, 'summary of 2 notes'], document: LARGE });
    const history = [];
    for await (const s of graph(second).getStateHistory(config)) history.push(s);
    expect(history.length).toBeGreaterThanOrEqual(4);
    expect(history[0]!.values).toEqual(resumed);
    await secondStore.close();

    // Every stored byte is ciphertext: no fragment of the payload, and content chunks are stored.
    const files = allFiles(dir);
    expect(files.some((f) => f.includes(`${join('chunks', '')}`))).toBe(true);
    for (const f of files) {
      const text = readFileSync(f).toString('latin1');
      expect(text, f).not.toContain('tool-returned');
      expect(text, f).not.toContain('summary of');
      expect(text, f).not.toContain('"channel_values"');
    }

    // A wrong key: the read fails, naming the key id it needs, never a key or a plaintext.
    const wrong = EncryptionKey.generate();
    const locked = new SavepointSaver({ storage: opened(dir, wrong) });
    const err: unknown = await locked.getTuple(config).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isCheckpointError(err, 'checkpoint_encryption_key_missing')).toBe(true);
    const said = `${(err as Error).message} ${JSON.stringify((err as { details?: unknown }).details)}`;
    const keyIds = (await (opened(dir, key) as ReturnType<typeof encryptedStorage>).keyring.list()).keys.map((k) => k.keyId);
    expect(said).toContain(keyIds[0]);
    for (const secret of [EncryptionKey.toText(key), EncryptionKey.toText(wrong), SECRET]) expect(said).not.toContain(secret);
  });

  it('names a long thread id by a keyed hash: no key name holds its SHA-256, and the thread reads, lists and deletes', async () => {
    const threadId = 'customer alice@example.com / ticket 4711 / session 2026-11-29';
    const unkeyed = createHash('sha256').update(threadId).digest('hex').slice(0, 40);
    const config = { configurable: { thread_id: threadId } };
    const inner = memoryStorage();
    const key = EncryptionKey.generate();
    const store = encryptedStorage(inner, { keys: key });
    const saver = new SavepointSaver({ storage: store });
    await graph(saver).invoke({ notes: ['start'] }, config);

    const keys = (await listAll(inner, '')).map((e) => e.key);
    const runId = await runIdOf(threadId, '', store);
    expect(runId).toMatch(/^h_[0-9a-f]{40}$/);
    expect(runId).not.toBe(`h_${unkeyed}`);
    expect(await runIdOf(threadId, '')).toBe(`h_${unkeyed}`); // unencrypted stores keep SHA-256
    expect(keys.some((k) => k.startsWith(`langgraph/${runId}/`))).toBe(true);
    for (const k of keys) expect(k).not.toContain(unkeyed);
    // Another store, another key: another name for the same thread.
    expect(await runIdOf(threadId, '', encryptedStorage(memoryStorage(), { keys: EncryptionKey.generate() }))).not.toBe(runId);

    // A new saver over the same store finds the thread by its id, lists it with a thread filter, and deletes it.
    const again = new SavepointSaver({ storage: encryptedStorage(inner, { keys: key }) });
    expect((await graph(again).getState(config)).values.notes).toEqual(['start', `fetched ${SECRET}`]);
    const listed = [];
    for await (const t of again.list(config)) listed.push(t);
    expect(listed.length).toBeGreaterThan(0);
    await again.deleteThread(threadId);
    expect(await again.getTuple(config)).toBeUndefined();
  });
});
