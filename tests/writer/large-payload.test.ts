/**
 * Large checkpoints: split into parts and read back equal, a payload that cannot fit refused
 * before it is encoded, big strings never copied whole. That their time is linear in their
 * size is measured by `npm run bench -- scaling` (time belongs to the bench, not to tests).
 */
import { describe, expect, it } from 'vitest';
import { createWriter, defaultProfile, memoryStorage, type JsonValue } from 'savepoint';
import { readSnapshot, splitDocument } from 'savepoint/toolkit';
import { canonicalJsonByWalk, canonicalJsonOf } from '../../src/codec/canonical-json.js';
import { materialText, validateTrigger } from '../../src/writer/triggers.js';
import { manualClock } from '../support/clock.js';
import { groupedPayload as payload } from '../support/grouped-payload.js';

const LIMIT = 16 * 1024;

describe('large checkpoints', () => {
  it('splitDocument of a document far over the limit: members, then their groups, move to parts until the main document fits', async () => {
    const { main, parts } = await splitDocument({ state: payload(480) } as { state: JsonValue }, LIMIT, (n) => `p/${n}`);
    expect(new TextEncoder().encode(JSON.stringify(main)).length).toBeLessThanOrEqual(LIMIT);
    expect(parts.length).toBeGreaterThan(480);
  });

  it('a split checkpoint is written and read back equal', async () => {
    const storage = memoryStorage();
    const writer = createWriter({ storage, profile: defaultProfile, runId: 'split', maxSnapshotBytes: LIMIT, heartbeatIntervalMs: false });
    const state = payload(200);
    const r = await writer.checkpoint({ source: 'manual', status: 'in_progress', payload: state });
    await writer.close();
    if (!r.ok) throw r.error;
    expect((await readSnapshot(storage, defaultProfile, r.key))?.payload).toEqual(state);
  });

  it("splitDocument copies a document it is given, and changes one handed over with { owned: true } in place (the writer's private parse: one payload less at the peak)", async () => {
    const doc = { state: payload(40) } as { state: JsonValue };
    const before = JSON.stringify(doc);
    const copied = await splitDocument(doc, LIMIT, (n) => `p/${n}`);
    expect(JSON.stringify(doc)).toBe(before);
    expect(copied.main).not.toBe(doc);
    const owned = await splitDocument(doc, LIMIT, (n) => `p/${n}`, { owned: true });
    expect(owned.main).toBe(doc);
    expect(JSON.stringify(owned.main)).toBe(JSON.stringify(copied.main));
    expect(owned.parts.map((p) => p.sha256)).toEqual(copied.parts.map((p) => p.sha256));
  });

  it('a payload with one string over the limit is refused before the document is encoded or split', async () => {
    const writer = createWriter({
      storage: memoryStorage(),
      profile: defaultProfile,
      runId: 'huge',
      maxSnapshotBytes: LIMIT,
      heartbeatIntervalMs: false,
    });
    const r = await writer.checkpoint({ source: 'manual', status: 'in_progress', payload: { s: 'x'.repeat(LIMIT * 4) } });
    await writer.close();
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.reasonCode).toBe('checkpoint_too_large');
    await expect(splitDocument({ a: 'y'.repeat(LIMIT + 1) }, LIMIT, (n) => `p/${n}`)).rejects.toMatchObject({
      reasonCode: 'checkpoint_too_large',
    });
  });

  it("with onOversize 'reject', an oversized payload is refused from its text alone", async () => {
    const writer = createWriter({
      storage: memoryStorage(),
      profile: defaultProfile,
      runId: 'rej',
      maxSnapshotBytes: LIMIT,
      onOversize: 'reject',
      heartbeatIntervalMs: false,
    });
    const r = await writer.checkpoint({ source: 'manual', status: 'in_progress', payload: payload(10) });
    await writer.close();
    expect(!r.ok && r.reasonCode).toBe('checkpoint_too_large');
    expect(!r.ok && r.error.details).toMatchObject({ limit: LIMIT });
  });

  it('big strings go into the stored bytes by reference: the payload text comes in pieces and is never copied whole (peak memory)', async () => {
    // Before: the text was built by JSON.stringify (a copy in pieces), flattened (a second
    // copy) and encoded (a third): ~4× a 64 MiB payload at peak. Now the big strings are
    // pieces of their own, encoded one after the other (figures: npm run bench -- large).
    const big = `${'0123456789'.repeat(10_000)}é`; // 100,001 chars, non-ASCII: the UTF-8 path too
    const payload: JsonValue = { b: big, a: [1, 'small', { c: big }], z: null };
    const { text, pieces } = canonicalJsonOf(payload);
    expect(pieces?.filter((p) => p === big)).toHaveLength(2);
    expect(pieces?.every((p) => p === big || p.length < 1024)).toBe(true);
    expect(text).toBe(canonicalJsonByWalk(payload));
    expect(text).toBe(`{"a":[1,"small",{"c":${JSON.stringify(big)}}],"b":${JSON.stringify(big)},"z":null}`);
    // A big string that needs escapes is copied as JSON.stringify escapes it.
    const quoted = `"${big}\n`;
    expect(canonicalJsonOf({ q: quoted })).toEqual({ text: `{"q":${JSON.stringify(quoted)}}` });

    const storage = memoryStorage();
    // Without content chunks (on by default): this reads the document's own stored bytes.
    const writer = createWriter({ storage, profile: defaultProfile, runId: 'pieces', heartbeatIntervalMs: false, dedup: false });
    const r = await writer.checkpoint({ source: 'manual', status: 'in_progress', payload });
    await writer.close();
    if (!r.ok) throw r.error;
    const stored = await storage.get(r.key);
    expect(new TextDecoder().decode(stored!.bytes)).toContain(`"state":${text}`);
    const back = await readSnapshot(storage, defaultProfile, r.key); // schema and checksum verified
    expect(back?.payload).toEqual(payload);
    expect(back?.integrity.checksum).toBe(r.snapshot.integrity.checksum);
  });

  it('a big payload is compared for coalescing by digest (never copied whole), and coalesces as a small one does, after a restart too', async () => {
    // Before: its material text was compared whole, which copied both texts (the second
    // checkpoint of a 64 MiB payload cost 2× the payload more than the first).
    const big = '0123456789'.repeat(10_000);
    const key = validateTrigger(defaultProfile, { source: 'manual', status: 'in_progress', payload: { doc: big, step: 1 } }, 0).material;
    expect(key).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(materialText(defaultProfile, 'in_progress', { doc: big, step: 1 })).toBe(key);
    expect(materialText(defaultProfile, 'completed', { doc: big, step: 1 })).not.toBe(key);

    const storage = memoryStorage();
    const clock = manualClock();
    const open = () => createWriter({ storage, profile: defaultProfile, runId: 'big-coalesce', clock, heartbeatIntervalMs: false });
    const outcomes: string[] = [];
    const write = async (w: ReturnType<typeof open>, payload: JsonValue): Promise<string | undefined> => {
      const r = await w.checkpoint({ source: 'manual', status: 'in_progress', payload });
      outcomes.push(r.ok ? `${r.outcome}#${r.sequence}` : r.reasonCode);
      return r.ok ? r.key : undefined;
    };
    const w1 = open();
    await write(w1, { doc: big, step: 1 });
    await clock.advance(1000); // later groups: the coalesced trigger rewrites the stored head (from its pieces)
    const rewritten = await write(w1, { doc: `${big.slice(0, 50_000)}${big.slice(50_000)}`, step: 1 }); // equal content, another string
    const head = await readSnapshot(storage, defaultProfile, rewritten!);
    expect(head?.payload).toEqual({ doc: big, step: 1 });
    expect(head?.sourceDetails).toHaveLength(1);
    await write(w1, { doc: `x${big.slice(1)}`, step: 1 }); // same length, one character changed
    await w1.close();
    const w2 = open(); // the head comes back from storage: its key from materialText
    await write(w2, { doc: `x${big.slice(1)}`, step: 1 });
    await write(w2, { doc: big, step: 2 });
    await w2.close();
    expect(outcomes).toEqual(['written#1', 'coalesced#1', 'written#2', 'coalesced#2', 'written#3']);
  });
});
