/**
 * A gate for an fsStorage journal's calls: an `FsIo` whose `rename` is `heldAt(gate,
 * realIo.rename)` holds every apply at its first rename while the gate is closed, and lets
 * them go when it opens (any other call likewise: the token's unlink, a checkpoint's fsync).
 */
export interface Gate {
  /** What a held call awaits: undefined while the gate is open. */
  wait(): Promise<void> | undefined;
  close(): void;
  open(): void;
}

export function gate(): Gate {
  let closed: Promise<void> | undefined;
  let release = (): void => undefined;
  return {
    wait: () => closed,
    close: () => {
      closed = new Promise((r) => (release = r));
    },
    open: () => {
      closed = undefined;
      release();
    },
  };
}

/** `call`, waiting at `g` first while it is closed; `onHeld` runs when a call starts waiting (a test knows the call was reached). */
export function heldAt<A extends unknown[], R>(g: Gate, call: (...args: A) => Promise<R>, onHeld?: () => void): (...args: A) => Promise<R> {
  return async (...args) => {
    const waiting = g.wait();
    if (waiting) {
      onHeld?.();
      await waiting;
    }
    return call(...args);
  };
}
