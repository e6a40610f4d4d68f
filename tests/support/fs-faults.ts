import { realIo, type FsIo } from '../../src/storage/fs/fd.js';

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
export function failingNthCall(n: number, armed: () => boolean): { io: FsIo; fired: () => boolean } {
  let calls = 0;
  let fired = false;
  const io = faultingIo((name) => {
    if (!armed() || ++calls !== n) return undefined;
    fired = true;
    return `injected, ${name}`;
  });
  return { io, fired: () => fired };
}
