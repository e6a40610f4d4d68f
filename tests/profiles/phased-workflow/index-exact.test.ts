/**
 * phased-workflow-github.md's node 8 adds each checkpoint to `index.json` after its write, and
 * its resume fallback ("fetch index.json and load highest sequence") and the n8n node's
 * `sequence_number = checkpoint_count + 1` read the index. Up to 1000 entries the index is
 * rewritten with every checkpoint: after a crash its highest sequence is the last acknowledged
 * checkpoint. Beyond, the geometric cadence of deferred-index.test.ts bounds the bytes.
 */
import { describe, expect, it } from 'vitest';
import { createWriter, memoryStorage } from 'savepoint';
import { decodeRunIndex } from 'savepoint/toolkit';
import { initialPhasedPayload, phasedWorkflow } from 'savepoint/phased-workflow';
import { faultyStorage } from 'savepoint/testing';
import { newUuidV4 } from '../../../src/contract/ids.js';

describe('phasedWorkflow index.json does not lag the run', () => {
  it('after each of 200 checkpoints the index lists them all, and a crash leaves it at the last acknowledged one (regression)', async () => {
    const inner = memoryStorage();
    const runId = newUuidV4();
    // The writer's process dies at its 140th storage write (about checkpoint 135): nothing after it lands.
    const storage = faultyStorage(inner, { at: 140, action: 'crash', count: 'writes' });
    const writer = createWriter({ storage, profile: phasedWorkflow, runId, heartbeatIntervalMs: false, maxAttempts: 1 });
    const payload = initialPhasedPayload('phase_1_plan', '2026-01-15T14:00:00.000Z');
    let acknowledged = 0;
    for (let i = 1; i <= 200; i++) {
      payload.state_snapshot.current_phase_state.progress = { i };
      const r = await writer.checkpoint({ source: 'manual', status: 'in_progress', payload });
      if (!r.ok) break;
      acknowledged = r.sequence;
      const index = decodeRunIndex((await inner.get(phasedWorkflow.layout.indexKey!(runId)))!.bytes);
      expect(index.checkpoint_count).toBe(i);
    }
    expect(acknowledged).toBeGreaterThan(100);
    expect(acknowledged).toBeLessThan(200);
    const index = decodeRunIndex((await inner.get(phasedWorkflow.layout.indexKey!(runId)))!.bytes);
    expect(index.checkpoints.at(-1)!.sequence).toBe(acknowledged);
    expect(index.checkpoint_count).toBe(acknowledged);
  }, 60_000);
});
