import { realIo, type FsIo } from '../../src/storage/fs/fd.js';

/** The first bytes of a journal record ("SPJ2", or "SPJ3" when it holds a move). */
const MAGIC = [0x53, 0x50, 0x4a];

/** The real file-system calls, counting the journal records written through them (a test's and the bench's measure of durable commits). */
export function countingIo(): { readonly io: FsIo; records(): number } {
  let records = 0;
  const io: FsIo = {
    ...realIo,
    writeAt: (fd, bytes, at) => {
      if (bytes.length > 20 && MAGIC.every((m, i) => bytes[i] === m) && (bytes[3] === 0x32 || bytes[3] === 0x33)) records++;
      return realIo.writeAt(fd, bytes, at);
    },
  };
  return { io, records: () => records };
}
