/**
 * progress-protocol.md's template says `**Session:** [timestamp]` without a format. A time people
 * write by hand is read as that time (UTC unless it names a zone), not as 1970-01-01.
 */
import { describe, expect, it } from 'vitest';
import { memoryStorage, planResume } from 'savepoint';
import { progressProtocol } from 'savepoint/progress-protocol';
import { foreignFixture } from '../../support/foreign.js';
import { utf8Encode } from '../../../src/codec/utf8.js';

const RUN = 'proj-1';

async function createdAtFor(session: string): Promise<string> {
  const storage = memoryStorage();
  const text = foreignFixture('progress-protocol', 'ccc-progress.spec-template.md').replace(
    /^\*\*Session:\*\*.*$/m,
    `**Session:** ${session}`,
  );
  await storage.put(progressProtocol.layout.latestKey(RUN), utf8Encode(text));
  return (await planResume({ storage, profile: progressProtocol, runId: RUN })).snapshot.createdAt;
}

describe('a human-readable **Session:** time', () => {
  it('`Dec 14, 2025 3:30 PM` is 2025-12-14T15:30Z, not 1970-01-01 (regression)', async () => {
    expect(await createdAtFor('Dec 14, 2025 3:30 PM')).toBe('2025-12-14T15:30:00.000Z');
  });

  it('a named zone is kept', async () => {
    expect(await createdAtFor('14 December 2025 15:30 GMT+0100')).toBe('2025-12-14T14:30:00.000Z');
  });

  it('the template placeholder still has no time', async () => {
    expect(await createdAtFor('[timestamp]')).toBe('1970-01-01T00:00:00Z');
  });
});
