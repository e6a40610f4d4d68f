/**
 * Runs in headless Chromium, bundled from the BUILT package (browser.test.ts aliases every
 * `savepoint` entry it imports to dist/; type-checking sees src/), on a page whose
 * Content-Security-Policy forbids 'unsafe-eval'. It writes, resumes and validates with
 * the core, memoryStorage and githubStorage, and reports to window.__savepoint.
 */
import { compileValidator, readSnapshot } from 'savepoint/toolkit';
import { createWriter, defaultProfile, memoryStorage, planResume, type JsonValue } from 'savepoint';
import { initialPhasedPayload, phasedWorkflow, type PhaseOutputs, type PhasedWorkflowPayload } from 'savepoint/phased-workflow';
import { githubStorage } from 'savepoint/github';

type Outcome = Record<string, unknown>;
declare global {
  interface Window {
    __savepoint?: { ok: boolean; results: Outcome; error?: string; violations: string[] };
  }
}

const violations: string[] = [];
document.addEventListener('securitypolicyviolation', (e) => violations.push(`${e.violatedDirective} ${e.sourceFile}:${e.lineNumber}`));

async function memoryScenario(): Promise<Outcome> {
  const storage = memoryStorage();
  const writer = createWriter({ storage, profile: defaultProfile, runId: 'browser-run' });
  for (let step = 1; step <= 3; step++) {
    const r = await writer.checkpoint({
      source: 'step_boundary',
      status: step === 3 ? 'completed' : 'in_progress',
      payload: { step } as JsonValue,
    });
    if (!r.ok) throw r.error;
  }
  await writer.close();
  const plan = await planResume({ storage, profile: defaultProfile, runId: 'browser-run' });
  // Tamper with latest: validation must catch it (ajv precompiled + checksum).
  const key = defaultProfile.layout.latestKey('browser-run');
  const stored = await storage.get(key);
  const tampered = new TextEncoder().encode(new TextDecoder().decode(stored!.bytes).replace('"step":3', '"step":4'));
  await storage.put(key, tampered);
  let tamperCode = '';
  try {
    await readSnapshot(storage, defaultProfile, key);
  } catch (err) {
    tamperCode = (err as { reasonCode?: string }).reasonCode ?? String(err);
  }
  const fallback = await planResume({ storage, profile: defaultProfile, runId: 'browser-run' });
  return {
    sequence: plan.snapshot.sequence,
    payload: plan.payload,
    tamperCode,
    fallbackSequence: fallback.snapshot.sequence,
    fallbackSkipped: fallback.skipped.map((s) => s.reasonCode),
  };
}

async function githubScenario(token: string): Promise<Outcome> {
  const storage = githubStorage({ owner: 'acme', repo: 'checkpoints', token, baseUrl: `${location.origin}/gh` });
  const runId = '0f8fad5b-d9cb-469f-a165-70867728950e';
  const writer = createWriter({ storage, profile: phasedWorkflow, runId, heartbeatIntervalMs: false });
  const payload = (phase: string, done: Partial<PhaseOutputs>): PhasedWorkflowPayload => {
    const empty = initialPhasedPayload(phase, '2026-11-22T00:00:00Z');
    const state = empty.state_snapshot;
    return { ...empty, state_snapshot: { ...state, phase_outputs: { ...state.phase_outputs, ...done }, cost_accumulated: 2.5 } };
  };
  const a = await writer.checkpoint({
    source: 'phase_complete',
    status: 'in_progress',
    payload: payload('phase_0_intake', { phase_0: { ok: true } }),
  });
  if (!a.ok) throw a.error;
  await writer.close();
  const plan = await planResume({ storage, profile: phasedWorkflow, runId });
  await storage.close();
  return { at: plan.at, message: plan.message ?? '' };
}

async function main(): Promise<void> {
  const results: Outcome = {};
  try {
    results.nodeGlobals =
      typeof (globalThis as { process?: unknown }).process === 'undefined' &&
      typeof (globalThis as { Buffer?: unknown }).Buffer === 'undefined';
    results.memory = await memoryScenario();
    results.github = await githubScenario(new URLSearchParams(location.search).get('token') ?? '');
    // A schema savepoint never saw must be compiled at run time, which this page's CSP
    // forbids: proof that the scenarios above validated without eval.
    try {
      compileValidator({ type: 'object', properties: { novel: { type: 'integer', minimum: 7 } } })({ novel: 1 });
      results.runtimeCompile = 'allowed';
    } catch (err) {
      results.runtimeCompile = (err as Error).name;
    }
    window.__savepoint = { ok: true, results, violations };
  } catch (err) {
    window.__savepoint = { ok: false, results, error: err instanceof Error ? `${err.name}: ${err.message}` : String(err), violations };
  }
}

void main();
