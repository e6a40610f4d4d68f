import { systemClock, type Clock } from '../../contract/clock.js';
import { createFaultSchedule, type FaultSchedule } from './faults.js';
import { createRepoState, type RepoState } from './repo-state.js';
import type { SchemaViolation } from './schemas.js';
import type { EmulatorRequestRecord, GitHubEmulatorOptions } from './server.js';

/** The primary rate-limit window as the emulator keeps it (what `x-ratelimit-*` headers report). */
export interface EmulatorBudget {
  limit: number;
  remaining: number;
  /** When the window resets, epoch ms. */
  resetAtMs: number;
  used: number;
}

/** Everything a running emulator keeps: its settings, the repository, the log, and the rate-limit windows. */
export interface EmulatorServerState {
  readonly options: GitHubEmulatorOptions;
  readonly clock: Clock;
  readonly owner: string;
  readonly repo: string;
  /** Validate request and response bodies against GitHub's schemas. */
  readonly validate: boolean;
  /** Keep parsed bodies in the request log. */
  readonly logBodies: boolean;
  readonly state: RepoState;
  readonly faults: FaultSchedule;
  readonly requestLog: EmulatorRequestRecord[];
  readonly schemaViolations: SchemaViolation[];
  /** Length of a primary rate-limit window. */
  readonly windowMs: number;
  readonly budget: EmulatorBudget;
  /** The secondary limit on content-creating requests; undefined when off. */
  readonly secondary: { readonly perMinute: number; readonly perHour: number } | undefined;
  /** Arrival times of the content-creating requests of the last hour, oldest first. */
  readonly created: number[];
  /** Requests received so far (the last one's number). */
  seq: number;
  /** `http://127.0.0.1:<port>`, once listening. */
  base: string;
}

/** The state of a new emulator: its repository (one README commit unless `empty`) and full rate-limit budgets. */
export function createEmulatorState(options: GitHubEmulatorOptions): EmulatorServerState {
  const clock = options.clock ?? systemClock;
  const repo = options.repo ?? 'checkpoints';
  const windowMs = options.rateLimit?.windowMs ?? 3_600_000;
  return {
    options,
    clock,
    owner: options.owner ?? 'savepoint',
    repo,
    validate: options.validate ?? true,
    logBodies: options.logBodies ?? true,
    state: createRepoState({
      defaultBranch: options.defaultBranch ?? 'main',
      now: () => clock.now(),
      userName: 'savepoint-emulator',
      userEmail: 'emulator@savepoint.invalid',
      ...(options.empty ? {} : { initialFiles: { 'README.md': `# ${repo}\n` } }),
    }),
    faults: createFaultSchedule(),
    requestLog: [],
    schemaViolations: [],
    windowMs,
    budget: {
      limit: options.rateLimit?.limit ?? 5000,
      remaining: options.rateLimit?.remaining ?? options.rateLimit?.limit ?? 5000,
      resetAtMs: clock.now() + windowMs,
      used: 0,
    },
    secondary:
      options.secondaryLimit === false
        ? undefined
        : { perMinute: options.secondaryLimit?.perMinute ?? 80, perHour: options.secondaryLimit?.perHour ?? 500 },
    created: [],
    seq: 0,
    base: '',
  };
}
