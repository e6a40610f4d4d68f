import type { CliIo } from '../../src/cli/io.js';

/** The CLI's I/O captured in memory, for running commands in-process: not a terminal, empty stdin. */
export function captureIo(): CliIo & { out: string; err: string } {
  const x = {
    out: '',
    err: '',
    stdout: { isTTY: false, write: (t: string) => ((x.out += t), true) },
    stderr: { isTTY: false, write: (t: string) => ((x.err += t), true) },
    env: {},
    readStdin: async () => '',
  };
  return x;
}
