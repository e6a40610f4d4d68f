import type { EmulatorServerState } from './emulator-state.js';
import type { EmulatorFault } from './faults.js';
import { errorReply, type HandlerContext, type Reply, type Route } from './handlers.js';
import { primaryReply, secondaryReply } from './rate-budget.js';
import type { Exchange } from './request-exchange.js';

/** What the faults fired into one request make of it. */
export interface InjectedFaults {
  /** The answer a fault imposes instead of the handler's. */
  readonly reply: Reply | undefined;
  /** Drop the connection without an answer, before handling. */
  readonly drop: boolean;
  /** Answer this many real milliseconds late, after handling. */
  readonly lateMs: number;
  /** A fault applied after the request was handled ("it landed, but the answer is lost"). */
  readonly post: EmulatorFault | undefined;
}

/** Waits `ms` real milliseconds (slow-response faults exercise real request timeouts). */
export const delay = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Fires the faults scheduled for this request: some act now (another writer's commit, a flag on `ctx`), the rest are returned. */
export async function injectFaults(emu: EmulatorServerState, ex: Exchange, matched: Route, ctx: HandlerContext): Promise<InjectedFaults> {
  const mutable = ctx as { staleBack: number | undefined; corrupt: boolean };
  const { n } = ex;
  let reply: Reply | undefined;
  let drop = false;
  let lateMs = 0;
  let post: EmulatorFault | undefined;
  for (const fault of emu.faults.take({ operation: ex.operation, method: ex.method, path: `${ex.url.pathname}${ex.url.search}` }, n)) {
    ex.fired.push(fault.kind);
    switch (fault.kind) {
      case 'move-head': {
        const branch = matched.branch(ctx);
        emu.state.commitFiles(
          { [fault.path ?? `foreign/${n}.txt`]: `written by another process before request ${n}\n` },
          { branch, message: `foreign write before request ${n}` },
        );
        break;
      }
      case 'stale-read':
        mutable.staleBack = fault.commitsBack ?? 1;
        break;
      case 'corrupt-write':
        mutable.corrupt = true;
        break;
      case 'primary-rate-limit':
        emu.budget.remaining = 0;
        reply ??= primaryReply(emu, fault.status ?? 403);
        break;
      case 'secondary-rate-limit':
        reply ??= secondaryReply(emu, fault.status ?? 403, fault.retryAfterSec);
        break;
      case 'status':
        if (fault.landed) post = fault;
        else reply ??= errorReply(fault.status, fault.message ?? (fault.status >= 500 ? 'Server Error' : 'Injected failure'));
        break;
      case 'network-error':
        if (fault.landed) post = fault;
        else drop = true;
        break;
      case 'delay':
        if (fault.landed ?? true) lateMs = Math.max(lateMs, fault.ms);
        else await delay(fault.ms);
        break;
    }
  }
  return { reply, drop, lateMs, post };
}
