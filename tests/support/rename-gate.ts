/**
 * A gate for an fsStorage journal's applies: an `FsIo` whose `rename` awaits `wait()` holds
 * every apply at its first rename while the gate is closed, and lets them go when it opens.
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
