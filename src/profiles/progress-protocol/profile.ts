import type { DocumentFormat } from '../../contract/document-format.js';
import { gunzip, isGzip } from '../../codec/gzip.js';
import { utf8Decode, utf8Encode } from '../../codec/utf8.js';
import { CheckpointError } from '../../contract/errors.js';
import { assertRunId } from '../../contract/ids.js';
import { FORMAT_VERSION, type Integrity, type Snapshot, type SnapshotDraft } from '../../contract/snapshot.js';
import { assertValid, documentValidator } from '../../codec/document-validator.js';
import * as generated from '../../codec/generated/progress-stored-progress-json-schema.js';
import { defineProfile } from '../define-profile.js';
import { type Profile } from '../../contract/profile.js';
import type { KeyInfo, ProfileLayout } from '../../contract/layout.js';
import type { ResumePoint, ResumeRule } from '../../contract/resume-rule.js';
import { assertKey } from '../../storage/keys.js';
import { parseProgress, renderProgress } from './codec.js';
import { progressChecksum } from './checksum.js';
import { keepProgressForeignFields, progressForeignReader } from './foreign.js';
import {
  PROGRESS_STATUSES,
  PROGRESS_TRIGGERS,
  ProgressDocumentSchema,
  storedProgressJsonSchema,
  type ProgressStatus,
  type ProgressDocument,
  type ProgressMeta,
  type StoredProgress,
} from './model.js';
import { assertObjectArgument, assertOptionsArgument } from '../../contract/arguments.js';

export { PROGRESS_STATUSES, PROGRESS_TRIGGERS, type ProgressStatus };
export { progressChecksum };

/** Options of {@link progressProtocolFormat}. */
export interface ProgressProtocolFormatOptions {
  /** Written to `integrity.format_version`. @default FORMAT_VERSION ('1.0') */
  readonly formatVersion?: string;
}

/**
 * The {@link DocumentFormat} of the `progressProtocol` profile: `.ccc-progress.md` in the
 * spec's layout with savepoint's metadata comment (`<!-- savepoint: {…} -->`, run id,
 * sequence, trigger, status and `integrity`) under the title. Reads validate the parsed
 * `{ document, meta }` with ajv against {@link storedProgressJsonSchema}, then verify the
 * checksum (see {@link progressChecksum}).
 */
export function progressProtocolFormat(
  options: ProgressProtocolFormatOptions & ProgressLayoutOptions = {},
): DocumentFormat<ProgressDocument> {
  assertOptionsArgument(options, 'progressProtocolFormat');
  const formatVersion = options.formatVersion ?? FORMAT_VERSION;
  const validate = documentValidator(generated.validate); // storedProgressJsonSchema's, generated at build time
  const layout = progressLayout(options);
  return {
    extension: '.md',
    jsonSchema: storedProgressJsonSchema,
    async encode(draft: SnapshotDraft<ProgressDocument>) {
      const where = `snapshot ${draft.sequence} of run ${draft.runId}`;
      const document = parseProgress(renderProgress(draft.payload), where).document;
      const unsealed = {
        snapshot_id: draft.id,
        run_id: draft.runId,
        sequence: draft.sequence,
        created_at: draft.createdAt,
        source: draft.source,
        ...(draft.sourceDetails.length > 0 ? { source_details: draft.sourceDetails } : {}),
        ...(draft.priority ? { priority: draft.priority } : {}),
        status: draft.status,
        integrity: { format_version: formatVersion, algorithm: 'sha256' as const },
      };
      const integrity: Integrity = { ...unsealed.integrity, checksum: await progressChecksum(document, unsealed) };
      const meta: ProgressMeta = { ...unsealed, integrity };
      assertValid(validate({ document, meta }), where);
      return { bytes: utf8Encode(renderProgress(document, meta)), snapshot: { ...draft, payload: document, integrity } };
    },
    async decode(bytes: Uint8Array, where: string): Promise<Snapshot<ProgressDocument>> {
      const plain = isGzip(bytes) ? gunzip(bytes, where) : bytes;
      const parsed = parseProgress(utf8Decode(plain, where), where);
      if (parsed.meta === undefined) {
        throw new CheckpointError(
          'checkpoint_schema_invalid',
          `${where} has no savepoint metadata comment (it was not written by savepoint)`,
          { details: { where } },
        );
      }
      assertValid(validate(parsed), where);
      const { document, meta } = parsed as StoredProgress;
      if ((await progressChecksum(document, meta)) !== meta.integrity.checksum) {
        throw new CheckpointError('checkpoint_integrity_mismatch', `${where}: stored checksum does not match the content`, {
          details: { where },
        });
      }
      return {
        id: meta.snapshot_id,
        runId: meta.run_id,
        sequence: meta.sequence,
        createdAt: meta.created_at,
        source: meta.source,
        sourceDetails: meta.source_details ?? [],
        ...(meta.priority ? { priority: meta.priority } : {}),
        status: meta.status,
        payload: document,
        integrity: meta.integrity,
      };
    },
    // The single artifact the protocol's own tool rewrites: its version is read with a
    // warning, and what it wrote survives savepoint's next rewrite (docs/progress-protocol.md).
    decodeForeign: progressForeignReader((where) => layout.classify(where)),
    keepForeignFields: keepProgressForeignFields,
  };
}

/** Options of {@link progressLayout}. */
export interface ProgressLayoutOptions {
  /** Folder holding one sub-folder per run. @default 'progress' */
  readonly root?: string;
  /** Name of the progress file. @default '.ccc-progress.md' */
  readonly fileName?: string;
  /**
   * One run kept at `<fileName>` in the store's root — for a store rooted at a project
   * directory, where the protocol writes `.ccc-progress.md`. Other run ids are refused.
   * @default undefined (one folder per run under `root`)
   */
  readonly projectRunId?: string;
}

const LOCK_NAME = '.savepoint-lock.json';

/**
 * Where progress files live: a single artifact per run, updated in place — no history,
 * no index (progress-protocol.md: "No new files per checkpoint"). By default
 * `<root>/<run_id>/.ccc-progress.md`; with `projectRunId`, `.ccc-progress.md` in the
 * store's root.
 */
export function progressLayout(options: ProgressLayoutOptions = {}): ProfileLayout {
  assertOptionsArgument(options, 'progressLayout');
  const fileName = options.fileName ?? '.ccc-progress.md';
  assertKey(fileName);
  if (fileName.includes('/'))
    throw new CheckpointError('checkpoint_config_invalid', 'progressLayout: fileName must be a single path segment');
  const project = options.projectRunId;
  if (project !== undefined) {
    assertRunId(project);
    const lockKey = `${fileName}${LOCK_NAME}`;
    const only = (runId: string): void => {
      if (runId !== project) throw new CheckpointError('checkpoint_key_invalid', 'this progress layout holds one run only (projectRunId)');
    };
    return {
      runsPrefix: '',
      latestKey: (runId) => (only(runId), fileName),
      lockKey: (runId) => (only(runId), lockKey),
      classify: (key): KeyInfo | undefined =>
        key === fileName
          ? { kind: 'latest', runId: project, compressed: false }
          : key === lockKey
            ? { kind: 'lock', runId: project, compressed: false }
            : undefined,
    };
  }
  const root = options.root ?? 'progress';
  assertKey(root);
  const runDir = (runId: string): string => {
    assertRunId(runId);
    return `${root}/${runId}`;
  };
  return {
    runsPrefix: `${root}/`,
    latestKey: (runId) => `${runDir(runId)}/${fileName}`,
    lockKey: (runId) => `${runDir(runId)}/${LOCK_NAME}`,
    classify(key) {
      if (!key.startsWith(`${root}/`)) return undefined;
      const rest = key.slice(root.length + 1).split('/');
      if (rest.length !== 2) return undefined;
      const [runId, name] = rest as [string, string];
      try {
        assertRunId(runId);
      } catch {
        return undefined;
      }
      if (name === fileName) return { kind: 'latest', runId, compressed: false };
      if (name === LOCK_NAME) return { kind: 'lock', runId, compressed: false };
      return undefined;
    },
  };
}

/**
 * Resume rule of the progress profile: the Continuation Prompt section is the
 * continuation prompt (as `/ccc:go` reads it); `at` is the current task, else the first
 * remaining task. Blockers, status `blocked` or a terminal status make the run
 * ineligible for automatic resume.
 */
export const progressResumeRule: ResumeRule<ProgressDocument> = (snapshot, context) => {
  assertObjectArgument(snapshot, 'progressResumeRule', 'snapshot');
  assertObjectArgument(snapshot.payload, 'progressResumeRule', 'snapshot.payload');
  assertObjectArgument(context, 'progressResumeRule', 'context');
  const p = snapshot.payload;
  const terminal = context.isTerminal ? context.isTerminal(snapshot.status) : snapshot.status === 'completed';
  const remaining = [...(p.currentTask ? [p.currentTask.description] : []), ...p.remainingTasks];
  const base = {
    completed: [...p.completedTasks],
    remaining,
    continuationPrompt: p.continuationPrompt,
    restored: {
      issue: p.issue,
      executionMode: p.executionMode,
      decisions: p.decisions,
      blockers: p.blockers,
      currentTask: p.currentTask ?? null,
    },
  };
  const total = p.completedTasks.length + remaining.length;
  let point: Omit<ResumePoint, keyof typeof base>;
  if (terminal) {
    point = {
      at: 'done',
      reason: `run_${snapshot.status}`,
      explanation: `The progress file of ${p.issue.id} ended with status ${snapshot.status}.`,
      eligible: false,
    };
  } else if (p.blockers.length > 0 || snapshot.status === 'blocked') {
    point = {
      at: remaining[0] ?? 'done',
      reason: 'blocked',
      explanation: `${p.issue.id} has ${p.blockers.length} active blocker(s); a human must clear them before resuming.`,
      eligible: false,
    };
  } else if (p.currentTask) {
    point = {
      at: p.currentTask.description,
      reason: 'continue_current_task',
      explanation: `Resume ${p.issue.id} at task ${p.completedTasks.length + 1} of ${total}, the current task${p.currentTask.status ? ` (${p.currentTask.status})` : ''}.`,
      eligible: true,
    };
  } else if (remaining.length > 0) {
    point = {
      at: remaining[0]!,
      reason: 'next_task',
      explanation: `Resume ${p.issue.id} with the next remaining task (${p.completedTasks.length + 1} of ${total}).`,
      eligible: true,
    };
  } else {
    point = { at: 'done', reason: 'no_remaining_tasks', explanation: `${p.issue.id} has no current or remaining task.`, eligible: false };
  }
  return { ...point, ...base };
};

/** Options of {@link progressProtocolProfile}. */
export interface ProgressProtocolProfileOptions extends ProgressLayoutOptions, ProgressProtocolFormatOptions {
  /** Profile name. @default 'progressProtocol' */
  readonly name?: string;
  /** Coalescing window. @default 3000 */
  readonly coalesceWindowMs?: number;
}

/**
 * Makes a `progressProtocol` profile (progress-protocol.md): payload
 * {@link ProgressDocument}, triggers `handoff_request`, `session_split`,
 * `context_threshold`, `gate_boundary`, statuses {@link PROGRESS_STATUSES}, a single
 * artifact per run updated in place ({@link progressLayout}), format
 * {@link progressProtocolFormat}, resume rule {@link progressResumeRule}. The `session`
 * timestamp is not material state, so two checkpoints that differ only in it coalesce.
 *
 * @example
 * ```ts
 * // the file the protocol writes in a project directory, resumed like any profile:
 * const profile = progressProtocolProfile({ projectRunId: 'CIA-123' });
 * const plan = await planResume({ storage: fsStorage({ root: projectDir }), profile, runId: 'CIA-123' });
 * ```
 */
export function progressProtocolProfile(options: ProgressProtocolProfileOptions = {}): Profile<ProgressDocument> {
  assertOptionsArgument(options, 'progressProtocolProfile');
  return defineProfile<ProgressDocument>({
    name: options.name ?? 'progressProtocol',
    description: 'The .ccc-progress.md single-artifact progress file of the four-step checkpoint protocol',
    sharedFiles: 'the next agent session reads .ccc-progress.md',
    payload: ProgressDocumentSchema,
    triggers: PROGRESS_TRIGGERS,
    statuses: { all: PROGRESS_STATUSES, terminal: ['completed'], active: 'in_progress' },
    document: progressProtocolFormat(options),
    layout: progressLayout(options),
    heartbeat: false,
    onOversize: 'reject',
    compressHistory: false,
    materialView: ({ session: _session, ...material }) => material,
    ...(options.coalesceWindowMs !== undefined ? { coalesceWindowMs: options.coalesceWindowMs } : {}),
    resume: progressResumeRule,
  });
}

/** The built-in `progressProtocol` profile (`progress/<run_id>/.ccc-progress.md`). */
export const progressProtocol: Profile<ProgressDocument> = progressProtocolProfile();
