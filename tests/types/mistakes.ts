/**
 * Compile-time fixtures: each `@ts-expect-error` marks a mistake the public types must
 * reject. `tests/types/types.process.test.ts` runs `tsc --noEmit -p tests/types`, so if a change makes
 * one of these compile again, the directive becomes unused and the test fails.
 * Nothing here runs.
 */
import { z } from 'zod';
import * as z3 from 'zod3';
import * as v from 'valibot';
import {
  createWriter,
  defaultProfile,
  findIncompleteRuns,
  planResume,
  defineProfile,
  jsonProfile,
  memoryStorage,
  standardLayout,
  type CheckpointResult,
  type CheckpointWriter,
  type PayloadOf,
  type Profile,
  type StatusOf,
  type TriggerOf,
} from 'savepoint';
import { historyBySnapshotId } from 'savepoint/toolkit';

declare const storage: ReturnType<typeof memoryStorage>;

export async function defaultProfileMistakes(): Promise<void> {
  // No profile: the default one is used.
  const writer = createWriter({ storage, runId: 'r' });
  await writer.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { step: 1 } });
  // @ts-expect-error typo'd status
  await writer.checkpoint({ source: 'step_boundary', status: 'in_progres', payload: { step: 1 } });
  // @ts-expect-error typo'd trigger
  await writer.checkpoint({ source: 'step_boundry', status: 'in_progress', payload: { step: 1 } });
  // @ts-expect-error a function is not JSON
  await writer.checkpoint({ source: 'manual', status: 'paused', payload: () => 1 });

  const explicit = createWriter({ storage, profile: defaultProfile, runId: 'r' });
  // @ts-expect-error typo'd status with the profile given explicitly
  await explicit.checkpoint({ source: 'manual', status: 'complete', payload: null });
}

interface AgentState {
  step: number;
  notes: string[];
}

export async function interfacePayloads(): Promise<void> {
  // An interface (no index signature) is a payload type, with the default profile or jsonProfile.
  const writer = createWriter<AgentState>({ storage, runId: 'r' });
  await writer.checkpoint({ source: 'manual', status: 'in_progress', payload: { step: 1, notes: [] } });
  // @ts-expect-error wrong payload shape
  await writer.checkpoint({ source: 'manual', status: 'in_progress', payload: { step: '1', notes: [] } });

  const profile = jsonProfile<AgentState>();
  const typed = createWriter({ storage, profile, runId: 'r' });
  const r: CheckpointResult<AgentState> = await typed.checkpoint({
    source: 'timer',
    status: 'in_progress',
    payload: { step: 2, notes: ['a'] },
  });
  if (r.ok) {
    const step: number = r.snapshot.payload.step; // read back typed, no `as unknown as`
    void step;
  }
  // @ts-expect-error missing field
  await typed.checkpoint({ source: 'timer', status: 'in_progress', payload: { step: 2 } });
  // @ts-expect-error typo'd status on a jsonProfile
  await typed.checkpoint({ source: 'timer', status: 'done', payload: { step: 2, notes: [] } });

  const stepType: PayloadOf<typeof profile> = { step: 1, notes: [] };
  void stepType;
}

export async function interfaceValueWithoutTypeArgument(state: AgentState): Promise<void> {
  // A value typed by an interface is a payload of a writer made without a type argument too.
  const writer = createWriter({ storage, runId: 'r' });
  await writer.checkpoint({ source: 'manual', status: 'in_progress', payload: state });
  // @ts-expect-error a function is still not JSON
  await writer.checkpoint({ source: 'manual', status: 'in_progress', payload: (x: number) => x });
  // @ts-expect-error nor a function inside an object literal
  await writer.checkpoint({ source: 'manual', status: 'in_progress', payload: { step: 1, run: () => 1 } });
}

export async function typedResume(): Promise<void> {
  // The payload type is named the same way on every entry point: a type argument.
  const plan = await planResume<AgentState>({ storage, runId: 'r' });
  const step: number = plan.snapshot.payload.step;
  void step;
  // With the default profile given explicitly, or a jsonProfile of the type.
  const explicit = await planResume<AgentState>({ storage, profile: defaultProfile, runId: 'r' });
  const notes: string[] = explicit.snapshot.payload.notes;
  void notes;
  const fromJsonProfile = await planResume({ storage, profile: jsonProfile<AgentState>(), runId: 'r' });
  void fromJsonProfile.snapshot.payload.notes;
  // @ts-expect-error not a member of the named payload type
  void plan.snapshot.payload.missing;
  const untyped = await planResume({ storage, runId: 'r' });
  // @ts-expect-error without a type argument the payload is any JSON value, not an AgentState
  const wrong: number = untyped.snapshot.payload.step;
  void wrong;
  const runs = await findIncompleteRuns<AgentState>({ storage });
  void runs;
  // @ts-expect-error the run id is required
  await planResume<AgentState>({ storage });
}

export async function schemaLibraries(): Promise<void> {
  const fromZod4 = jsonProfile({ schema: z.object({ step: z.number() }) });
  const fromZod3 = jsonProfile({ schema: z3.object({ step: z3.number() }) });
  const fromValibot = jsonProfile({ schema: v.object({ step: v.number() }) });
  for (const profile of [fromZod4, fromZod3, fromValibot]) {
    const w = createWriter({ storage, profile, runId: 'r' });
    await w.checkpoint({ source: 'manual', status: 'in_progress', payload: { step: 1 } });
    // @ts-expect-error payload does not match the schema's output type
    await w.checkpoint({ source: 'manual', status: 'in_progress', payload: { step: 'one' } });
  }
  // @ts-expect-error a plain object is not a schema
  jsonProfile({ schema: { step: 'number' } });
}

export async function customProfiles(): Promise<void> {
  const custom = defineProfile({
    name: 'myAgent',
    payload: z3.object({ step: z3.number() }),
    triggers: { step_done: {}, manual: {} },
    statuses: { all: ['running', 'done'], terminal: ['done'], active: 'running' },
    layout: standardLayout({ root: 'runs', history: historyBySnapshotId() }),
    document: defaultProfile.document as unknown as Profile<{ step: number }>['document'],
  });
  const triggers: TriggerOf<typeof custom>[] = ['step_done', 'manual'];
  const statuses: StatusOf<typeof custom>[] = ['running', 'done'];
  void triggers;
  void statuses;
  // @ts-expect-error not a trigger of this profile
  const wrongTrigger: TriggerOf<typeof custom> = 'step_boundary';
  void wrongTrigger;

  const w: CheckpointWriter<{ step: number }, 'step_done' | 'manual', 'running' | 'done'> = createWriter({
    storage,
    profile: custom,
    runId: 'r',
  });
  await w.checkpoint({ source: 'step_done', status: 'done', payload: { step: 1 } });
  // @ts-expect-error the default profile's status is not this profile's
  await w.checkpoint({ source: 'step_done', status: 'completed', payload: { step: 1 } });

  defineProfile({
    name: 'bad',
    payload: z.object({}),
    triggers: { go: {} },
    // @ts-expect-error the active status must be one of statuses.all
    statuses: { all: ['running', 'done'], terminal: ['done'], active: 'runing' },
    layout: standardLayout({ root: 'runs', history: historyBySnapshotId() }),
    document: defaultProfile.document as unknown as Profile<object>['document'],
  });
}

export function heartbeatSource(): void {
  defineProfile({
    name: 'beat',
    payload: z.object({}),
    triggers: { go: {}, tick: {} },
    statuses: { all: ['running', 'done'], terminal: ['done'], active: 'running' },
    // @ts-expect-error the heartbeat source must be one of the triggers
    heartbeat: { source: 'tock', intervalMs: 1000 },
    layout: standardLayout({ root: 'runs', history: historyBySnapshotId() }),
    document: defaultProfile.document as unknown as Profile<object>['document'],
  });
}
