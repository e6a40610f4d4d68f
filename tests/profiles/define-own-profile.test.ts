import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { createWriter, defineProfile, memoryStorage, planResume, standardLayout } from 'savepoint';
import { historyBySnapshotId, IntegritySchema, jsonDocumentFormat, Rfc3339Schema, TriggerRecordSchema } from 'savepoint/toolkit';
import { utf8Decode } from '../../src/codec/utf8.js';

// The example of docs/profiles.md "Define your own profile", kept compiling and working here.
const Payload = z.object({ step: z.number().int(), notes: z.array(z.string()) }).strict();
type Payload = z.infer<typeof Payload>;

const Document = z
  .object({
    id: z.string(),
    run: z.string(),
    seq: z.number().int().min(1),
    at: Rfc3339Schema,
    trigger: z.enum(['step_done', 'manual', 'timer']),
    coalesced: z.array(TriggerRecordSchema),
    state: z.enum(['running', 'done', 'failed']),
    step: z.number().int(),
    notes: z.array(z.string()),
    integrity: IntegritySchema,
  })
  .strict();
type Doc = z.infer<typeof Document>;

const myAgent = defineProfile<Payload>({
  name: 'myAgent',
  payload: Payload,
  triggers: { step_done: { priority: 'high' }, manual: {}, timer: {} },
  statuses: { all: ['running', 'done', 'failed'], terminal: ['done', 'failed'], active: 'running' },
  layout: standardLayout({ root: 'runs', history: historyBySnapshotId() }),
  heartbeat: { source: 'timer', intervalMs: 60_000 },
  document: jsonDocumentFormat<Payload, Doc>({
    schema: Document,
    toDocument: (s) => ({
      id: s.id,
      run: s.runId,
      seq: s.sequence,
      at: s.createdAt,
      trigger: s.source as Doc['trigger'],
      coalesced: s.sourceDetails,
      state: s.status as Doc['state'],
      ...s.payload,
    }),
    fromDocument: (d) => ({
      id: d.id,
      runId: d.run,
      sequence: d.seq,
      createdAt: d.at,
      source: d.trigger,
      sourceDetails: d.coalesced,
      status: d.state,
      payload: { step: d.step, notes: d.notes },
    }),
  }),
  resume: (snapshot) => ({
    at: String(snapshot.payload.step + 1),
    reason: 'next_step',
    explanation: `step ${snapshot.payload.step} was the last one saved`,
    eligible: snapshot.status === 'running',
    completed: [],
    remaining: [],
  }),
});

describe('a profile defined with defineProfile (docs example)', () => {
  it('writes its own document shape and resumes with its own rule', async () => {
    const storage = memoryStorage();
    const writer = createWriter({ storage, profile: myAgent, runId: 'agent-1' });
    const r = await writer.checkpoint({ source: 'step_done', status: 'running', payload: { step: 3, notes: ['ok'] } });
    expect(r).toMatchObject({ ok: true, outcome: 'written' });
    await writer.close();
    const doc = JSON.parse(utf8Decode((await storage.get('runs/agent-1/latest.json'))!.bytes)) as Doc;
    expect(doc).toMatchObject({ run: 'agent-1', seq: 1, trigger: 'step_done', state: 'running', step: 3, notes: ['ok'] });
    const plan = await planResume({ storage, profile: myAgent, runId: 'agent-1' });
    expect(plan).toMatchObject({ at: '4', reason: 'next_step', eligible: true });
  });
});
