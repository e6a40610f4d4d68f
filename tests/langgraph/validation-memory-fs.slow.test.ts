import './validation-globals.js';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deltaChannelHistoryTests, validate, type CheckpointSaverTestInitializer } from '@langchain/langgraph-checkpoint-validation';
import { memoryStorage } from 'savepoint';
import { fsStorage } from 'savepoint/fs';
import { SavepointSaver } from 'savepoint/langgraph';

// LangGraph's own checkpointer validation suite, in full (no filters), against savepoint's
// embedded adapters, and its opt-in `getDeltaChannelHistory` suite (the saver's own walk).
// Each checkpointer gets a fresh store, as the suite requires.
const inMemory: CheckpointSaverTestInitializer<SavepointSaver> = {
  checkpointerName: 'savepoint SavepointSaver on memoryStorage',
  createCheckpointer: () => new SavepointSaver({ storage: memoryStorage() }),
};
validate(inMemory);
deltaChannelHistoryTests(inMemory);

const dirs = new Map<SavepointSaver, string>();
// Both fsStorage modes: direct, and the write-ahead journal (a put is answered
// before its directories are made, and a thread's run is listed once).
for (const journal of [false, true]) {
  const onFs: CheckpointSaverTestInitializer<SavepointSaver> = {
    checkpointerName: `savepoint SavepointSaver on fsStorage${journal ? ' (journal)' : ''}`,
    async createCheckpointer() {
      const dir = await mkdtemp(join(tmpdir(), 'savepoint-lg-validate-'));
      const saver = new SavepointSaver({ storage: fsStorage({ dir, journal }) });
      dirs.set(saver, dir);
      return saver;
    },
    async destroyCheckpointer(saver) {
      await saver.storage.close();
      await rm(dirs.get(saver)!, { recursive: true, force: true });
      dirs.delete(saver);
    },
  };
  validate(onFs);
  deltaChannelHistoryTests(onFs);
}
