#!/usr/bin/env node
/** The `savepoint` command. See `savepoint --help` and the README's CLI section. */
import { runCli } from './run.js';

// A reader that stops early (`savepoint prune | head -2`) closes the pipe: that ends the
// command quietly, as it does for other Unix tools, instead of an unhandled EPIPE crash.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw err;
  });
}

const io = {
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
  async readStdin(): Promise<string> {
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString('utf8');
  },
};

runCli(process.argv.slice(2), io).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`savepoint: unexpected error: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  },
);
