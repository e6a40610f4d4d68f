import type { CliIo } from '../../src/cli/io.js';
import { runCli } from '../../src/cli/run.js';

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

/** Runs the CLI in-process on {@link captureIo}: exit code, stdout and stderr; `stdin` is what the command reads from `-`. */
export async function runCliCaptured(args: readonly string[], stdin = ''): Promise<{ code: number; out: string; err: string }> {
  const io = captureIo();
  io.readStdin = async () => stdin;
  const code = await runCli(args, io);
  return { code, out: io.out, err: io.err };
}
