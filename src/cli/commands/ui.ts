import { startUiServer } from '../../ui/server.js';
import { stringFlag, type Command, type CommandContext } from '../command.js';
import { CliError, EXIT } from '../io.js';

/** What the page calls the store: never the Postgres URL (it may hold a password) nor a token. */
function storeLabel(ctx: CommandContext): string {
  const github = stringFlag(ctx, 'github');
  if (github) return `github ${github.split(':')[0]}`;
  if (stringFlag(ctx, 'postgres') !== undefined || ctx.storage.name === 'postgres') return 'postgres';
  return `dir ${stringFlag(ctx, 'dir') ?? '.'}`;
}

/** Resolves on SIGINT / SIGTERM (Ctrl-C), so the command returns and the store is closed. */
function untilInterrupted(): Promise<void> {
  return new Promise((resolve) => {
    const stop = (): void => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve();
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
}

/** `savepoint ui [--port N] [--allow-prune]` */
export const uiCommand: Command = {
  name: 'ui',
  usage: '[--port N] [--allow-prune]',
  maxPositionals: 0,
  summary: 'Serve a local web viewer of the store on 127.0.0.1 (runs, timelines, diffs, verify, resume and retention plans)',
  options: {
    port: { type: 'string', value: 'N', description: 'Port on 127.0.0.1 (default: a free one)' },
    'allow-prune': { type: 'boolean', description: 'Let the page apply a retention plan (after a confirmation); read-only without it' },
  },
  async run(ctx) {
    if (ctx.positionals.length > 0) throw new CliError(`ui takes no arguments (got "${ctx.positionals[0]}")`);
    const rawPort = stringFlag(ctx, 'port') ?? '0';
    const port = Number(rawPort);
    if (!/^[0-9]+$/.test(rawPort) || port > 65535) throw new CliError('--port takes a number from 0 to 65535');
    let server;
    try {
      server = await startUiServer({
        storage: ctx.storage,
        profile: ctx.profile,
        clock: ctx.clock,
        port,
        allowPrune: ctx.values['allow-prune'] === true,
        storeLabel: storeLabel(ctx),
      });
    } catch (err) {
      throw new CliError(`cannot listen on 127.0.0.1:${port}: ${(err as { code?: string }).code ?? 'error'}`, EXIT.failed);
    }
    ctx.io.stdout.write(`${server.url}\n`);
    ctx.io.stderr.write(
      `savepoint ui: serving ${storeLabel(ctx)} (${ctx.profile.name}) ${ctx.values['allow-prune'] === true ? 'with pruning allowed' : 'read-only'}; the URL's token is the key — do not share it. Ctrl-C stops.\n`,
    );
    await untilInterrupted();
    await server.close();
    return EXIT.ok;
  },
};
