import { readFile, writeFile } from 'node:fs/promises';
import { EncryptionKey } from '../../storage/encrypted/encryption-key.js';
import type { Command, CommandContext } from '../command.js';
import { requireEncrypted } from '../encryption.js';
import { CliError, EXIT, printJson, table } from '../io.js';

/**
 * The key named by `--new-key-file PATH`: read from the file when it exists, else a new random
 * key written there (mode 0600), so the new key is never printed.
 */
async function newKey(ctx: CommandContext): Promise<{ key: EncryptionKey; created: boolean; path: string }> {
  const path = ctx.values['new-key-file'];
  if (typeof path !== 'string')
    throw new CliError('key add and key rotate need --new-key-file PATH (read if it exists, else a new key is written there)');
  const text = await readFile(path, 'utf8').catch(() => undefined);
  if (text !== undefined) return { key: EncryptionKey.fromText(text), created: false, path };
  const key = EncryptionKey.generate();
  await writeFile(path, `${EncryptionKey.toText(key)}\n`, { mode: 0o600, flag: 'wx' });
  return { key, created: true, path };
}

async function listKeys(ctx: CommandContext): Promise<number> {
  const listing = await requireEncrypted(ctx.storage).keyring.list();
  // schemas/cli/key.v1.json: `dataKeyId` is null (not left out) before the store's first write.
  if (ctx.json) printJson(ctx.io, { action: 'list', dataKeyId: listing.dataKeyId ?? null, keys: listing.keys });
  else {
    ctx.io.stdout.write(`data key ${listing.dataKeyId ?? '(none yet)'}\n`);
    ctx.io.stdout.write(
      table(
        ['KEY ID', 'KIND', 'GIVEN'],
        listing.keys.map((k) => [k.keyId, k.kind, k.given ? 'yes' : 'no']),
      ),
    );
  }
  return EXIT.ok;
}

/** `savepoint key list|add|rotate|remove` */
export const keyCommand: Command = {
  name: 'key',
  usage: 'list | add --new-key-file PATH | rotate --new-key-file PATH | remove KEY_ID | run-id NAME',
  maxPositionals: 2,
  summary: "Manage an encrypted store's keys (the store's key from --key-file or SAVEPOINT_KEY); checkpoints are never rewritten",
  options: {
    'new-key-file': {
      type: 'string',
      value: 'PATH',
      description: 'The key to add or rotate to: read from PATH, or a new random key written there (mode 0600) when PATH does not exist',
    },
  },
  async run(ctx: CommandContext) {
    const [action, arg] = ctx.positionals;
    if (action === 'list') return listKeys(ctx);
    const store = requireEncrypted(ctx.storage);
    if (action === 'run-id') {
      if (!arg) throw new CliError('key run-id needs a NAME: prints the hidden run id the store gives that name');
      const runId = await store.hiddenRunId(arg);
      if (ctx.json) printJson(ctx.io, { action: 'run-id', name: arg, runId });
      else ctx.io.stdout.write(`${runId}\n`);
      return EXIT.ok;
    }
    if (action === 'remove') {
      if (!arg) throw new CliError('key remove needs a KEY_ID (see savepoint key list)');
      await store.keyring.remove(arg);
      if (ctx.json) printJson(ctx.io, { action: 'remove', removed: [arg] });
      else ctx.io.stdout.write(`removed key ${arg}\n`);
      return EXIT.ok;
    }
    if (action !== 'add' && action !== 'rotate') throw new CliError('usage: savepoint key list | add | rotate | remove | run-id');
    const { key, created, path } = await newKey(ctx);
    const from = created ? `a new key written to ${path}` : `the key in ${path}`;
    if (action === 'add') {
      const added = await store.keyring.add(key);
      if (ctx.json) printJson(ctx.io, { action: 'add', added, created, path });
      else ctx.io.stdout.write(`added key ${added} (${from})\n`);
    } else {
      const { added, removed } = await store.keyring.rotate(key);
      if (ctx.json) printJson(ctx.io, { action: 'rotate', added, removed, created, path });
      else
        ctx.io.stdout.write(`rotated to key ${added} (${from}); removed ${removed.join(', ') || 'none'}. No checkpoint was rewritten.\n`);
    }
    return EXIT.ok;
  },
};
