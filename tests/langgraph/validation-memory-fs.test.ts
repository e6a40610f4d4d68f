import './validation-globals.js';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { validate } from '@langchain/langgraph-checkpoint-validation';
import { memoryStorage } from 'savepoint';
import { fsStorage } from 'savepoint/fs';
import { SavepointSaver } from 'savepoint/langgraph';

// LangGraph's own checkpointer validation suite, in full (no filters), against savepoint's
// embedded adapters. Each checkpointer gets a fresh store, as the suite requires.
validate({
  checkpointerName: 'savepoint SavepointSaver on memoryStorage',
  createCheckpointer: () => new SavepointSaver({ storage: memoryStorage() }),
});

const dirs = new Map<SavepointSaver, string>();
validate({
  checkpointerName: 'savepoint SavepointSaver on fsStorage',
  async createCheckpointer() {
    const dir = await mkdtemp(join(tmpdir(), 'savepoint-lg-validate-'));
    const saver = new SavepointSaver({ storage: fsStorage({ dir }) });
    dirs.set(saver, dir);
    return saver;
  },
  async destroyCheckpointer(saver) {
    await saver.storage.close();
    await rm(dirs.get(saver)!, { recursive: true, force: true });
    dirs.delete(saver);
  },
});
