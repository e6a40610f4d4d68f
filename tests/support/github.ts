import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach } from 'vitest';
import type { Clock } from 'savepoint';
import type { TimerHandle } from 'savepoint/toolkit';
import { githubStorage, type GitHubStorage, type GitHubStorageEvent, type GitHubStorageOptions } from 'savepoint/github';
import { startGitHubEmulator, type GitHubEmulator, type GitHubEmulatorOptions } from 'savepoint/testing';

/** A clock whose time only moves when something waits on it (auto) or when the test says so (manual). */
export interface VirtualClock extends Clock {
  /** Timers fire as soon as the event loop is free, jumping time to their due moment. @default true */
  auto: boolean;
  /** Moves time forward by `ms`, firing every timer due on the way, in order. */
  advance(ms: number): Promise<void>;
  /** Timers not fired yet. */
  readonly pending: number;
  /** Every setTimeout delay requested, in order (to check how long the adapter chose to wait). */
  readonly delays: number[];
}

export function virtualClock(startMs = Date.UTC(2025, 11, 5, 12, 0, 0)): VirtualClock {
  let now = startMs;
  let nextId = 1;
  const timers: { id: number; due: number; cb: () => void }[] = [];
  const delays: number[] = [];
  let pumping = false;
  const pump = (): void => {
    if (pumping) return;
    pumping = true;
    setImmediate(() => {
      pumping = false;
      if (!clock.auto || timers.length === 0) return;
      timers.sort((a, b) => a.due - b.due || a.id - b.id);
      const t = timers.shift()!;
      now = Math.max(now, t.due);
      t.cb();
      if (timers.length > 0) pump();
    });
  };
  const clock: VirtualClock = {
    auto: true,
    now: () => now,
    setTimeout(cb, ms) {
      const id = nextId++;
      delays.push(ms);
      timers.push({ id, due: now + Math.max(0, ms), cb });
      pump();
      return id as TimerHandle;
    },
    clearTimeout(handle) {
      const i = timers.findIndex((t) => t.id === handle);
      if (i >= 0) timers.splice(i, 1);
    },
    async advance(ms) {
      const target = now + ms;
      for (;;) {
        timers.sort((a, b) => a.due - b.due || a.id - b.id);
        const t = timers[0];
        if (!t || t.due > target) break;
        timers.shift();
        now = Math.max(now, t.due);
        t.cb();
        await new Promise((r) => setImmediate(r));
      }
      now = Math.max(now, target);
      if (clock.auto) pump();
    },
    get pending() {
      return timers.length;
    },
    delays,
  };
  return clock;
}

/**
 * A clock that runs `scale` times faster than real time. Unlike the virtual clock, waits
 * still take (scaled-down) real time, so concurrent processes that back off really do
 * spread out: what a test of racing writers needs.
 */
export function scaledClock(scale: number, startMs = Date.UTC(2025, 11, 5, 12, 0, 0)): Clock {
  const realStart = performance.now();
  return {
    now: () => startMs + Math.round((performance.now() - realStart) * scale),
    setTimeout: (cb, ms) => setTimeout(cb, Math.max(0, ms / scale)),
    clearTimeout: (h) => clearTimeout(h as ReturnType<typeof setTimeout>),
  };
}

export const TOKEN = 'ghp_testTOKENabcdefghijklmnopqrstuvwxyz0123';

export interface Env {
  gh: GitHubEmulator;
  clock: VirtualClock;
  events: GitHubStorageEvent[];
  storage: GitHubStorage;
  /** Another adapter on the same repository (another process), with its own state and write lock. */
  another(options?: Partial<GitHubStorageOptions>): GitHubStorage;
  close(): Promise<void>;
}

/** An emulator and a githubStorage on it, sharing a virtual clock. */
export async function startEnv(
  options: { emulator?: GitHubEmulatorOptions; storage?: Partial<GitHubStorageOptions>; clock?: Clock } = {},
): Promise<Env> {
  const clock = (options.clock ?? virtualClock()) as VirtualClock;
  const gh = await startGitHubEmulator({ token: TOKEN, clock, ...options.emulator });
  // The env's own durable queue folder, shared by its adapters as processes in one working
  // directory share the default one: the default (under the working directory) is named by
  // the emulator's URL, and a reused port would let a later test adopt writes this one queued.
  const spillDir = await mkdtemp(join(tmpdir(), 'savepoint-gh-queue-'));
  const events: GitHubStorageEvent[] = [];
  const adapters: GitHubStorage[] = [];
  const make = (extra: Partial<GitHubStorageOptions> = {}, record = true): GitHubStorage => {
    const s = githubStorage({
      owner: gh.owner,
      repo: gh.repo,
      token: TOKEN,
      baseUrl: gh.url,
      clock,
      serializeWrites: 'adapter',
      requestTimeoutMs: 5000,
      emergencyQueue: { dir: spillDir },
      ...(record ? { onEvent: (e: GitHubStorageEvent) => events.push(e) } : {}),
      ...options.storage,
      ...extra,
    });
    adapters.push(s);
    return s;
  };
  const storage = make();
  return {
    gh,
    clock,
    events,
    storage,
    another: (o) => make(o, false),
    async close() {
      clock.auto = true;
      await gh.close();
      await rm(spillDir, { recursive: true, force: true });
    },
  };
}

export type EnvOptions = NonNullable<Parameters<typeof startEnv>[0]>;

/**
 * For a test file: registers an `afterEach` that closes every environment its test started,
 * and returns the function that starts one. `defaults.storage` lies under each call's own
 * storage options.
 */
export function envPerTest(defaults: { storage?: Partial<GitHubStorageOptions> } = {}): (options?: EnvOptions) => Promise<Env> {
  const envs: Env[] = [];
  afterEach(async () => {
    for (const e of envs.splice(0)) await e.close();
  });
  return async (options = {}) => {
    const e = await startEnv({ ...options, storage: { ...defaults.storage, ...options.storage } });
    envs.push(e);
    return e;
  };
}

export const text = (s: string): Uint8Array => new TextEncoder().encode(s);
export const str = (b: Uint8Array | undefined): string | undefined => (b ? new TextDecoder().decode(b) : undefined);

/** Every string reachable from `value` (own and inherited enumerable props, error messages, causes, details). */
export function deepStrings(value: unknown, seen = new Set<unknown>()): string[] {
  if (typeof value === 'string') return [value];
  if (value === null || typeof value !== 'object' || seen.has(value)) return [];
  seen.add(value);
  const out: string[] = [];
  if (value instanceof Error) out.push(value.message, value.stack ?? '', value.name, ...deepStrings(value.cause, seen));
  for (const key of Object.getOwnPropertyNames(value)) {
    out.push(key);
    try {
      out.push(...deepStrings((value as Record<string, unknown>)[key], seen));
    } catch {
      // getters that throw are not data
    }
  }
  try {
    out.push(JSON.stringify(value) ?? '');
  } catch {
    // cyclic
  }
  return out;
}
