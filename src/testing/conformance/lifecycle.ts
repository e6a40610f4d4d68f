import type { StorageAdapter } from '../../contract/storage.js';
import { listAll } from '../../contract/storage.js';
import { asCheckpointError, equal, equalJson, ok, rejects, sameBytes, utf8 } from './check.js';
import type { SuiteContext } from './context.js';

/** close() semantics, and persistence across close/reopen when the adapter is durable. */
export function lifecycleTests(ctx: SuiteContext): void {
  ctx.group('close', () => {
    ctx.test('close() is idempotent and every later call rejects with checkpoint_closed', async (s) => {
      await s.put('c/a', utf8('a'));
      await s.close();
      await s.close();
      await rejects(() => s.get('c/a'), 'checkpoint_closed', 'get after close');
      await rejects(() => s.put('c/b', utf8('b')), 'checkpoint_closed', 'put after close');
      await rejects(() => s.put('c/b', utf8('b'), { ifAbsent: true }), 'checkpoint_closed', 'create-only put after close');
      await rejects(() => s.delete('c/a'), 'checkpoint_closed', 'delete after close');
      await rejects(() => listAll(s, ''), 'checkpoint_closed', 'list after close');
      if (s.batch) {
        const batch = s.batch.bind(s);
        await rejects(() => batch([{ type: 'delete', key: 'c/a' }]), 'checkpoint_closed', 'batch after close');
      }
    });

    ctx.test('operations in flight when close() is called settle with a result or a CheckpointError', async (s) => {
      const writes = Array.from({ length: 4 }, (_, i) => s.put(`c/inflight-${i}`, utf8(String(i))));
      const read = s.get('c/inflight-0');
      await s.close();
      const settled = await Promise.allSettled([...writes, read]);
      for (const [i, r] of settled.entries()) {
        if (r.status === 'rejected')
          ok(asCheckpointError(r.reason), `operation ${i} in flight at close rejected with a non-CheckpointError: ${String(r.reason)}`);
      }
      if (ctx.options.reopen) {
        const again = await ctx.options.reopen(s);
        try {
          for (const [i, r] of settled.slice(0, 4).entries()) {
            if (r.status === 'fulfilled')
              sameBytes((await again.get(`c/inflight-${i}`))?.bytes, utf8(String(i)), `acknowledged write ${i} after reopen`);
          }
        } finally {
          await again.close();
        }
      }
    });

    ctx.test('acknowledged writes survive close and reopen with the same versions (durable adapters)', async (s) => {
      const reopen = ctx.options.reopen;
      if (!reopen) return; // not a durable adapter: nothing to check
      const a = await s.put('r/a', utf8('alpha'));
      const b = await s.put('r/b/c', utf8('beta'), { ifAbsent: true });
      await s.put('r/gone', utf8('x'));
      await s.delete('r/gone');
      const listed = await listAll(s, '');
      await s.close();
      let again: StorageAdapter | undefined = await reopen(s);
      try {
        const gotA = await again.get('r/a');
        sameBytes(gotA?.bytes, utf8('alpha'), 'r/a after reopen');
        equal(gotA?.version, a.version, 'version of r/a after reopen');
        equal((await again.get('r/b/c'))?.version, b.version, 'version of r/b/c after reopen');
        equal(await again.get('r/gone'), undefined, 'a deleted key after reopen');
        equalJson(await listAll(again, ''), listed, 'list after reopen');
        // Versions from before the restart still work as conditions.
        await again.put('r/a', utf8('alpha2'), { ifVersion: a.version });
        await rejects(
          () => again!.put('r/a', utf8('alpha3'), { ifVersion: a.version }),
          'checkpoint_conflict',
          'a version from before the restart, once replaced',
        );
        await again.close();
        again = undefined;
      } finally {
        await again?.close();
      }
    });
  });
}
