/**
 * LangGraph's SqliteSaver, the benchmarks' file-based peer. It needs a native build
 * (better-sqlite3), so it is no dependency of the project: `npm run bench:setup` installs it
 * for the benchmarks alone, and `npm ci` stays free of native compiles.
 */
import type { BaseCheckpointSaver } from '@langchain/langgraph-checkpoint';

/** The members of SqliteSaver the benchmarks use: LangGraph's saver API and better-sqlite3's handle. */
export type SqliteSaver = BaseCheckpointSaver & { readonly db: { pragma(sql: string): unknown; close(): unknown } };

interface SqliteSaverClass {
  fromConnString(path: string): SqliteSaver;
}

const PACKAGE = '@langchain/langgraph-checkpoint-sqlite';

async function load(): Promise<SqliteSaverClass> {
  try {
    const mod = (await import(PACKAGE)) as { SqliteSaver: SqliteSaverClass };
    return mod.SqliteSaver;
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code !== 'ERR_MODULE_NOT_FOUND' && code !== 'MODULE_NOT_FOUND') throw error;
    throw new Error(`${PACKAGE} is not installed: it is a benchmark-only peer. Run \`npm run bench:setup\` once, then the bench again.`, {
      cause: error,
    });
  }
}

/** The SqliteSaver class, loaded when a bench that measures beside it is imported. */
export const SqliteSaver: SqliteSaverClass = await load();
