import { moveOf } from '../../contract/move.js';
import { listAll, type StorageAdapter } from '../../contract/storage.js';
import { equal, ok, rejects, utf8 } from './check.js';
import type { SuiteContext } from './context.js';

/** Every version `key` has had, checked new as it is added. */
class VersionTrail {
  readonly seen: string[] = [];
  constructor(
    readonly adapter: StorageAdapter,
    readonly key: string,
  ) {}
  /** Adds the key's version now (after `what`), failing when the key had it before. */
  async add(what: string): Promise<string> {
    const version = (await this.adapter.get(this.key))?.version;
    ok(version !== undefined, `${this.key} after ${what}`);
    ok(!this.seen.includes(version), `${what} gave ${this.key} the version ${version} it had before (capabilities.versionsPerWrite)`);
    this.seen.push(version);
    return version;
  }
}

/**
 * The optional `versionsPerWrite` capability (contract/storage.ts), checked on stores that
 * declare it: every write of a key gives it a version it never had, however it is written.
 */
export function versionsPerWriteTests(ctx: SuiteContext): void {
  ctx.group('versions per write', () => {
    ctx.test('versions per write: declared only where versions do not name the content', async (adapter) => {
      if (adapter.capabilities.versionsPerWrite === true)
        ok(!ctx.contentVersions, "capabilities.versionsPerWrite declared, but the suite's options say versions: 'content'");
      const expected = ctx.options.capabilities?.versionsPerWrite;
      if (expected !== undefined) equal(adapter.capabilities.versionsPerWrite === true, expected, 'capabilities.versionsPerWrite');
    });

    ctx.test(
      'versions per write: the same bytes put again, put after a delete, by a batch or moved back: a new version each time',
      async (adapter) => {
        if (adapter.capabilities.versionsPerWrite !== true) return;
        const bytes = utf8('the same bytes every time');
        const trail = new VersionTrail(adapter, 'vw/k');
        await adapter.put(trail.key, bytes);
        const first = await trail.add('a put');
        await adapter.put(trail.key, bytes);
        await trail.add('a put of the same bytes');
        await adapter.delete(trail.key);
        await adapter.put(trail.key, bytes);
        await trail.add('a put of the same bytes after a delete');
        if (adapter.batch) {
          await adapter.batch([{ type: 'put', key: trail.key, bytes }]);
          await trail.add("a batch's put of the same bytes");
        }
        const move = moveOf(adapter);
        if (move) {
          await move(trail.key, 'vw/k.away');
          await move('vw/k.away', trail.key);
          await trail.add('a move away and back');
        }
        // What a sweep relies on: a delete at a version seen before any of these writes does nothing.
        await rejects(() => adapter.delete(trail.key, { ifVersion: first }), 'checkpoint_conflict', 'a delete at the first version');
        const listed = (await listAll(adapter, 'vw/')).find((e) => e.key === trail.key)?.version;
        equal(listed, trail.seen.at(-1), 'the listed version vs the last one read');
      },
    );
  });
}
