import { realIo, type FsIo } from '../../src/storage/fs/fd.js';
import { createFsStorage, type FsStorage } from '../../src/storage/fs/index.js';

/**
 * The real file-system calls, each first shown to `fault`: when it answers a message, the call
 * fails with that message as an `EIO` instead of running (a disk error at exactly that call).
 */
export function faultingIo(fault: (name: string, args: readonly unknown[]) => string | undefined): FsIo {
  return Object.fromEntries(
    Object.entries(realIo).map(([name, call]) => [
      name,
      (...args: unknown[]): unknown => {
        const message = fault(name, args);
        if (message !== undefined) return Promise.reject(Object.assign(new Error(`EIO: ${message}`), { code: 'EIO', syscall: name }));
        return (call as (...a: unknown[]) => unknown)(...args);
      },
    ]),
  ) as unknown as FsIo;
}

/** A {@link faultingIo} that fails the `n`th call made while `armed()` holds; `fired()` tells whether it came. */
function failingNthCall(n: number, armed: () => boolean): { io: FsIo; fired: () => boolean } {
  let calls = 0;
  let fired = false;
  const io = faultingIo((name) => {
    if (!armed() || ++calls !== n) return undefined;
    fired = true;
    return `injected, ${name}`;
  });
  return { io, fired: () => fired };
}

/**
 * Fails each file-system call in turn, from the first call `act` makes to the end of its apply:
 * for each call, a store over a fresh `seed()` directory runs `act` (armed by `arm`; its answer:
 * whether the change was acknowledged), is flushed and closed, and `check` looks at a store
 * opened again over the same directory. Ends once a run makes fewer calls than the one failed.
 */
export async function faultAtEveryCall(
  seed: () => Promise<string>,
  act: (store: FsStorage, arm: () => void) => Promise<boolean>,
  check: (again: FsStorage, acked: boolean, fail: number) => Promise<void>,
): Promise<void> {
  for (let fail = 1; ; fail++) {
    const dir = await seed();
    let armed = false;
    const { io, fired } = failingNthCall(fail, () => armed);
    const store = createFsStorage({ dir }, { io });
    const acked = await act(store, () => (armed = true));
    await store.flush!().catch(() => undefined);
    armed = false;
    await store.close().catch(() => undefined);
    const again = createFsStorage({ dir });
    try {
      await check(again, acked, fail);
    } finally {
      await again.close();
    }
    if (!fired()) return;
  }
}
