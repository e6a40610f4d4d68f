/**
 * CPU time of this process's threads, by kind, from `/proc/self/task` (Linux only): where a
 * checkpoint's CPU goes when eight runs share two cores (the 8-run row). Three
 * kinds: the main thread (JavaScript, and the wake-ups of every asynchronous call), libuv's
 * thread pool (the file-system calls themselves: almost all kernel time), and V8's helper
 * threads (the optimizing compiler and the concurrent garbage collector: user time only).
 * Node 20 names none of its threads, so a thread other than the main one is counted as the
 * pool's when it spent at least as much time in the kernel as in user space over the window
 * measured, else as V8's — in the measured windows the two kinds differ by 10× or more.
 */
import { readFileSync, readdirSync } from 'node:fs';

/** User and kernel milliseconds. */
export interface Cpu {
  readonly user: number;
  readonly sys: number;
}

/** CPU of one measured window, by kind of thread. */
export interface ThreadCpu {
  readonly main: Cpu;
  readonly pool: Cpu;
  readonly v8: Cpu;
}

/** Linux's USER_HZ: `/proc` counts CPU time in ticks of 10 ms. */
const TICK_MS = 10;

type Tasks = Map<string, Cpu>;

function readTasks(): Tasks | undefined {
  try {
    const tasks: Tasks = new Map();
    for (const tid of readdirSync('/proc/self/task')) {
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      // Fields after the command name (which may hold spaces, inside parentheses): utime and stime are the 12th and 13th.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      tasks.set(tid, { user: Number(fields[11]) * TICK_MS, sys: Number(fields[12]) * TICK_MS });
    }
    return tasks;
  } catch {
    return undefined;
  }
}

const add = (a: Cpu, b: Cpu): Cpu => ({ user: a.user + b.user, sys: a.sys + b.sys });
const ZERO: Cpu = { user: 0, sys: 0 };

/** Sums CPU over several windows, then splits it by kind of thread (see the file comment); undefined where `/proc` is not there. */
export function threadCpuMeter(): { measure<T>(fn: () => Promise<T>): Promise<T>; total(): ThreadCpu | undefined } {
  const perThread = new Map<string, Cpu>();
  let available = readTasks() !== undefined;
  return {
    async measure(fn) {
      const before = readTasks();
      const result = await fn();
      const after = readTasks();
      if (!before || !after) available = false;
      else {
        for (const [tid, cpu] of after) {
          const start = before.get(tid) ?? ZERO;
          perThread.set(tid, add(perThread.get(tid) ?? ZERO, { user: cpu.user - start.user, sys: cpu.sys - start.sys }));
        }
      }
      return result;
    },
    total() {
      if (!available) return undefined;
      let main = ZERO;
      let pool = ZERO;
      let v8 = ZERO;
      for (const [tid, cpu] of perThread) {
        if (tid === String(process.pid)) main = add(main, cpu);
        else if (cpu.sys >= cpu.user) pool = add(pool, cpu);
        else v8 = add(v8, cpu);
      }
      return { main, pool, v8 };
    },
  };
}

/** Total milliseconds of a split. */
export const totalMs = (t: ThreadCpu): number => t.main.user + t.main.sys + t.pool.user + t.pool.sys + t.v8.user + t.v8.sys;
