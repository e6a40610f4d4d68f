import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createWriter, encryptedStorage, EncryptionKey } from 'savepoint';
import { fsStorage } from 'savepoint/fs';
import { runCli } from '../../../src/cli/run.js';
import { captureIo } from '../../support/cli-io.js';
import { ROOT } from '../../support/build.js';
import Ajv2020Module from 'ajv/dist/2020.js';
import { scratchFolder } from '../../support/scratch.js';

const Ajv2020 = Ajv2020Module as unknown as typeof import('ajv').default;

// The CLI on an encrypted fs store: --key-file and SAVEPOINT_KEY open it, verify without a key
// checks what it can and says the rest is encrypted, `key` manages the keyring — and no key or
// plaintext is ever printed.
const base = scratchFolder('encrypted-cli');
const SECRET = 'tool-returned-credential-5a1f';

async function cli(args: readonly string[], env: Record<string, string> = {}): Promise<{ code: number; out: string; err: string }> {
  const io = captureIo();
  (io as { env: Record<string, string> }).env = env;
  const code = await runCli(args, io);
  return { code, out: io.out, err: io.err };
}

async function encryptedStore(): Promise<{ dir: string; key: EncryptionKey; keyText: string; keyFile: string }> {
  const dir = mkdtempSync(join(base, 'store-'));
  const key = EncryptionKey.generate();
  const storage = encryptedStorage(fsStorage({ layout: 'files', dir }), { keys: key });
  const writer = createWriter({ storage, runId: 'run-1', heartbeatIntervalMs: false });
  for (let i = 1; i <= 3; i++)
    await writer.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { step: i, note: SECRET } });
  await writer.close();
  await storage.close();
  const keyText = EncryptionKey.toText(key);
  const keyFile = join(base, `key-${Math.random().toString(36).slice(2)}`);
  writeFileSync(keyFile, keyText);
  return { dir, key, keyText, keyFile };
}

describe('savepoint CLI on an encrypted store', () => {
  it('reads it with --key-file or SAVEPOINT_KEY; without a key, a read names the key id it needs', async () => {
    const { dir, keyText, keyFile } = await encryptedStore();
    const withFile = await cli(['show', 'run-1', '--dir', dir, '--key-file', keyFile, '--json']);
    expect(withFile.code).toBe(0);
    expect(withFile.out).toContain(SECRET);
    const withEnv = await cli(['verify', '--dir', dir], { SAVEPOINT_KEY: keyText });
    expect(withEnv.code).toBe(0);
    const without = await cli(['show', 'run-1', '--dir', dir]);
    expect(without.code).not.toBe(0);
    expect(without.err).toContain('checkpoint_encryption_key_missing');
    for (const r of [withEnv, without]) expect(r.out + r.err).not.toContain(SECRET);
    for (const r of [withFile, withEnv, without]) expect(r.out + r.err).not.toContain(keyText);
  });

  it('verify without a key checks headers, says the contents are encrypted, and catches a damaged header', async () => {
    const { dir } = await encryptedStore();
    const ok = await cli(['verify', '--dir', dir]);
    expect(ok.code).toBe(0);
    expect(ok.out).toContain('encrypted and were not verified');
    const latest = join(dir, 'checkpoints', 'run-1', 'latest.json');
    const bytes = readFileSync(latest);
    bytes[0] = 0x7b; // "{": a plain JSON file put in its place
    writeFileSync(latest, bytes);
    const bad = await cli(['verify', '--dir', dir, '--json']);
    expect(bad.code).toBe(1);
    expect(JSON.parse(bad.out)).toMatchObject({
      encrypted: true,
      contentsVerified: false,
      problems: 1,
      findings: [{ key: 'checkpoints/run-1/latest.json' }],
    });
    // The same --json shape as verify's with a key: schemas/cli/verify.v1.json.
    const ajv = new Ajv2020({ strict: false });
    const validate = ajv.compile(JSON.parse(readFileSync(join(ROOT, 'schemas/cli/verify.v1.json'), 'utf8')) as object);
    expect(validate(JSON.parse(bad.out)), JSON.stringify(validate.errors)).toBe(true);
  });

  it('key list, add and rotate: the new key is written to a file (0600), never printed; old checkpoints open with it', async () => {
    const { dir, keyFile, keyText } = await encryptedStore();
    const listed = await cli(['key', 'list', '--dir', dir, '--json']);
    expect(listed.code).toBe(0);
    expect(JSON.parse(listed.out).keys).toHaveLength(1);
    const newFile = join(base, `new-${Math.random().toString(36).slice(2)}`);
    const rotated = await cli(['key', 'rotate', '--dir', dir, '--key-file', keyFile, '--new-key-file', newFile]);
    expect(rotated.code).toBe(0);
    expect(statSync(newFile).mode & 0o777).toBe(0o600);
    const newText = readFileSync(newFile, 'utf8').trim();
    expect(rotated.out + rotated.err).not.toContain(newText);
    expect(rotated.out + rotated.err).not.toContain(keyText);
    expect((await cli(['show', 'run-1', '--dir', dir, '--key-file', newFile])).code).toBe(0);
    const old = await cli(['show', 'run-1', '--dir', dir, '--key-file', keyFile]);
    expect(old.err).toContain('checkpoint_encryption_key_missing');
  });

  it('key --json outputs of list, add, rotate, remove and run-id validate against schemas/cli/key.v1.json and hold no key', async () => {
    const { dir, keyFile, keyText } = await encryptedStore();
    const ajv = new Ajv2020({ strict: false });
    const validate = ajv.compile(JSON.parse(readFileSync(join(ROOT, 'schemas/cli/key.v1.json'), 'utf8')) as object);
    let givenKey = keyFile;
    const run = async (args: string[]): Promise<Record<string, unknown>> => {
      const r = await cli(['key', ...args, '--dir', dir, '--key-file', givenKey, '--json']);
      expect(r.code, r.err).toBe(0);
      expect(r.out + r.err).not.toContain(keyText);
      const out = JSON.parse(r.out) as Record<string, unknown>;
      expect(validate(out), JSON.stringify(validate.errors)).toBe(true);
      return out;
    };
    const listed = await run(['list']);
    expect(listed).toMatchObject({ action: 'list', keys: [{ kind: 'raw', given: true }] });
    const addFile = join(base, `add-${Math.random().toString(36).slice(2)}`);
    const added = await run(['add', '--new-key-file', addFile]);
    expect(added).toMatchObject({ action: 'add', created: true, path: addFile });
    expect(JSON.stringify(added)).not.toContain(readFileSync(addFile, 'utf8').trim());
    const removed = await run(['remove', String(added.added)]);
    expect(removed).toEqual({ schemaVersion: 1, action: 'remove', removed: [added.added] });
    const rotateFile = join(base, `rotate-${Math.random().toString(36).slice(2)}`);
    const rotated = await run(['rotate', '--new-key-file', rotateFile]);
    expect(rotated).toMatchObject({ action: 'rotate', created: true, removed: [(listed.keys as { keyId: string }[])[0]!.keyId] });
    givenKey = rotateFile; // the old key no longer opens the store
    const hidden = await run(['run-id', 'alice@example.com/ticket-1']);
    const storage = encryptedStorage(fsStorage({ layout: 'files', dir }), {
      keys: EncryptionKey.fromText(readFileSync(rotateFile, 'utf8')),
    });
    expect(hidden).toEqual({
      schemaVersion: 1,
      action: 'run-id',
      name: 'alice@example.com/ticket-1',
      runId: await storage.hiddenRunId('alice@example.com/ticket-1'),
    });
    await storage.close();
    const plain = await cli(['key', 'run-id', 'alice@example.com/ticket-1', '--dir', dir, '--key-file', rotateFile]);
    expect(plain.out).toBe(`${String(hidden.runId)}\n`);
    // The schema tells one action's shape from another's.
    expect(validate({ ...removed, removed: added.added })).toBe(false);
    expect(validate({ ...listed, action: 'add' })).toBe(false);
  });
});
