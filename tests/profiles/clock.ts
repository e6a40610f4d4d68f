import type { Clock, TimerHandle } from 'savepoint';

/** A clock the test moves by hand; `advance` runs due timers in order, letting promises settle between them. */
export interface ManualClock extends Clock {
  advance(ms: number): Promise<void>;
}

const settle = async (): Promise<void> => {
  for (let i = 0; i < 20; i++) await Promise.resolve();
  await new Promise((r) => setImmediate(r));
};

export function manualClock(start = Date.UTC(2026, 0, 15, 14, 0, 0)): ManualClock {
  let now = start;
  let seq = 0;
  const timers: { at: number; id: number; cb: () => void }[] = [];
  return {
    now: () => now,
    setTimeout(cb, ms): TimerHandle {
      const h = { at: now + Math.max(0, ms), id: seq++, cb };
      timers.push(h);
      return h;
    },
    clearTimeout(h) {
      const i = timers.indexOf(h as (typeof timers)[number]);
      if (i >= 0) timers.splice(i, 1);
    },
    async advance(ms) {
      const end = now + ms;
      for (;;) {
        await settle();
        timers.sort((a, b) => a.at - b.at || a.id - b.id);
        const next = timers[0];
        if (!next || next.at > end) break;
        timers.shift();
        now = next.at;
        next.cb();
      }
      now = end;
      await settle();
    },
  };
}
