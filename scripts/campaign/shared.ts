/**
 * Shared pieces of `npm run campaign`: the run contract, temp folders, a budget (count and
 * time), and writing a run through the public API. Imports the package's src entries the
 * way the tests do (run with tsx), never internals.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createWriter, defaultProfile, type CheckpointWriter, type JsonValue, type StorageAdapter } from '../../src/index.js';

/** What one campaign run reports. */
export interface RunResult {
  tried: number;
  failed: number;
  /** Set when the run could not be done here (no tmpfs, not root …), with the reason. */
  skipped?: string;
  /** Short descriptions of the first failures, for the log. */
  notes: string[];
}

/** One campaign run: `quick` bounds it to seconds; the full run to a minute or so. */
export interface CampaignRun {
  readonly name: string;
  readonly what: string;
  run(quick: boolean): Promise<RunResult>;
}

export const profile = defaultProfile;

export function result(): RunResult {
  return { tried: 0, failed: 0, notes: [] };
}

/** Records one trial's outcome: `problem` undefined for a pass. */
export function record(r: RunResult, problem: string | undefined): void {
  r.tried++;
  if (problem === undefined) return;
  r.failed++;
  if (r.notes.length < 5) r.notes.push(problem);
}

/** Trials while both the count and the time allow. */
export function budget(quick: boolean, counts: { quick: number; full: number }, seconds: { quick: number; full: number }): () => boolean {
  const max = quick ? counts.quick : counts.full;
  const until = Date.now() + (quick ? seconds.quick : seconds.full) * 1000;
  let n = 0;
  return () => n++ < max && Date.now() < until;
}

/** A fresh temp folder, removed by the returned function. */
export function tempDir(label: string): { dir: string; dispose(): void } {
  const dir = mkdtempSync(join(tmpdir(), `savepoint-campaign-${label}-`));
  return { dir, dispose: () => rmSync(dir, { recursive: true, force: true }) };
}

export function writer(storage: StorageAdapter, runId: string): CheckpointWriter<JsonValue> {
  return createWriter({ storage, profile, runId, heartbeatIntervalMs: false, coalesceWindowMs: 0 });
}

/** The error's reason code, or a marker that it was not a CheckpointError (always a failure). */
export function describe(err: unknown): string {
  const code = (err as { reasonCode?: unknown })?.reasonCode;
  return typeof code === 'string' ? code : `raw ${err instanceof Error ? `${err.name}: ${err.message}` : String(err)}`;
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
