import { mkdtempSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { createWriter, defaultProfile, encryptedStorage, EncryptionKey, systemClock } from 'savepoint';
import { fsStorage } from 'savepoint/fs';
import { openEncrypted } from '../../../src/cli/encryption.js';
import { startUiServer, type UiServer } from '../../../src/ui/server.js';
import { scratchFolder } from '../../support/scratch.js';

// The viewer on an encrypted store, opened as `savepoint ui` opens it (src/cli/encryption.ts):
// with the key it shows the decrypted checkpoints; without it, every answer says the store is
// encrypted and names the key id it needs, and no answer — API or page — holds the key or a
// fragment of a plaintext.
const base = scratchFolder('encrypted-viewer');
const SECRET = 'conversation-with-credential-7d2b';
const key = EncryptionKey.generate();
const keyText = EncryptionKey.toText(key);
const keyHex = Buffer.from(keyText.replace(/^[^:]*:/, ''), 'base64').toString('hex');
let dir = '';
let keyId = '';

function get(ui: UiServer, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(`${ui.url}${path}`, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    req.end();
  });
}

const PATHS = [
  '',
  'app.js',
  'api/info',
  'api/runs',
  'api/runs/run-1/timeline',
  'api/runs/run-1/snapshots/latest',
  'api/runs/run-1/snapshots/2',
  'api/runs/run-1/diff?a=1&b=3',
  'api/runs/run-1/verify',
  'api/runs/run-1/resume',
  'api/retention',
];

async function viewer(withKey: boolean): Promise<{ ui: UiServer; answers: Map<string, { status: number; body: string }> }> {
  const storage = await openEncrypted(fsStorage({ dir, create: false, cleanupOnOpen: false }), withKey ? key : undefined);
  const ui = await startUiServer({ storage, profile: defaultProfile, clock: systemClock });
  const answers = new Map<string, { status: number; body: string }>();
  for (const p of PATHS) answers.set(p, await get(ui, p));
  await ui.close();
  await storage.close();
  return { ui, answers };
}

beforeAll(async () => {
  dir = mkdtempSync(join(base, 'store-'));
  const storage = encryptedStorage(fsStorage({ dir }), { keys: key });
  const writer = createWriter({ storage, runId: 'run-1', heartbeatIntervalMs: false });
  for (let i = 1; i <= 3; i++)
    await writer.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { step: i, transcript: `${SECRET} #${i}` } });
  await writer.close();
  keyId = (await storage.keyring.list()).keys[0]!.keyId;
  await storage.close();
});

describe('the viewer on an encrypted store', () => {
  it('with the key: runs, timeline, snapshots, diff, verify and resume show the decrypted data; the key is in no answer', async () => {
    const { answers } = await viewer(true);
    for (const [path, a] of answers) {
      expect(a.status, `${path}: ${a.body.slice(0, 300)}`).toBe(200);
      expect(a.body, path).not.toContain(keyText);
      expect(a.body, path).not.toContain(keyHex);
    }
    expect(JSON.parse(answers.get('api/runs')!.body)).toMatchObject([{ runId: 'run-1', sequence: 3 }]);
    expect(answers.get('api/runs/run-1/snapshots/latest')!.body).toContain(`${SECRET} #3`);
    expect(answers.get('api/runs/run-1/snapshots/2')!.body).toContain(`${SECRET} #2`);
    expect(answers.get('api/runs/run-1/diff?a=1&b=3')!.body).toContain(`${SECRET} #3`);
    expect(JSON.parse(answers.get('api/runs/run-1/verify')!.body)).toMatchObject({ problems: [] });
  });

  it('without the key: snapshot reads fail with checkpoint_encryption_key_missing naming the key id; no plaintext, no key', async () => {
    const { answers } = await viewer(false);
    for (const [path, a] of answers) {
      expect(a.body, path).not.toContain(SECRET.slice(0, 12));
      expect(a.body, path).not.toContain(keyText);
      expect(a.body, path).not.toContain(keyHex);
    }
    const latest = answers.get('api/runs/run-1/snapshots/latest')!;
    expect(latest.status).toBe(500);
    expect(JSON.parse(latest.body)).toMatchObject({ error: { reasonCode: 'checkpoint_encryption_key_missing' } });
    expect(latest.body).toContain(keyId);
  });
});
