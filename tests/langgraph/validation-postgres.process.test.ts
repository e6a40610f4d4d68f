import './validation-globals.js';
import { deltaChannelHistoryTests, validate, type CheckpointSaverTestInitializer } from '@langchain/langgraph-checkpoint-validation';
import type pg from 'pg';
import { describe, it } from 'vitest';
import { SavepointSaver } from 'savepoint/langgraph';
import { postgresStorage } from 'savepoint/postgres';
import { freshTable, hasPostgres, makePool, usePostgres } from '../support/postgres-fixture.js';

// LangGraph's validation suite, in full and with its opt-in getDeltaChannelHistory suite, against postgresStorage on a real PostgreSQL server
// the test starts itself (tests/support/postgres-server.ts): a fresh table per checkpointer.
const { server } = usePostgres();
if (hasPostgres) {
  const pools = new Map<SavepointSaver, pg.Pool>();
  const onPostgres: CheckpointSaverTestInitializer<SavepointSaver> = {
    checkpointerName: 'savepoint SavepointSaver on postgresStorage',
    async createCheckpointer() {
      const pool = makePool(server().url);
      const saver = new SavepointSaver({ storage: postgresStorage({ pool, table: freshTable('langgraph') }) });
      pools.set(saver, pool);
      return saver;
    },
    async destroyCheckpointer(saver) {
      await saver.storage.close();
      await pools.get(saver)?.end();
      pools.delete(saver);
    },
  };
  validate(onPostgres);
  deltaChannelHistoryTests(onPostgres);
} else {
  // Outside CI a machine without PostgreSQL skips loudly (tests/support/postgres-server.ts); in CI it fails there.
  const suite = hasPostgres ? describe : describe.skip;
  suite('LangGraph validation on postgresStorage: PostgreSQL is not installed', () => {
    it('needs initdb and pg_ctl', () => undefined);
  });
}
